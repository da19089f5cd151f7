package console

import (
	"errors"
	"net/http"

	"github.com/millfleet/mill/internal/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/queue"
)

// missingData is a page for a feature that is not there yet, or not
// configured: what is missing, and what to use meanwhile.
type missingData struct {
	Heading string
	Text    string
	Instead []string // commands or places to use meanwhile
	Depth   *int64   // the dead-letter queue's depth, on the dead-letters page
}

// Pages of features other parts of Mill will provide. Each says what is
// missing and what to use meanwhile; each becomes a real page (with its
// own routes here) when its library lands.
var pending = map[string]missingData{
	"dead-letters": {
		Heading: "Dead letters: coming with the dead-letter library",
		Text: "This page will list the dead letters (filter by type, source queue and error text; one letter's body and provenance), " +
			"and let operators redrive them (dry run first, at a rate) and purge them, with confirmation. It needs the dead-letter " +
			"library that is being extracted from `millctl dlq`, so the console and the CLI share one implementation.",
		Instead: []string{"millctl dlq list [--type T] [--source Q] [--error TEXT]", "millctl dlq show MESSAGE_ID",
			"millctl dlq redrive --dry-run …, then without --dry-run", "millctl dlq purge …"},
	},
	"fleet": {
		Heading: "Fleet: coming with the fleet registry",
		Text: "This page will list the Workman instances — who is working, on which queues, since when, what they are running — and " +
			"offer the fleet-wide pause. Mill does not record its instances yet; the fleet registry that will is being built.",
		Instead: []string{"each Workman's /readyz and /metrics (--http-addr)", "CloudWatch metrics, namespace Mill",
			"the Auto Scaling group of infra/workman.yaml"},
	},
	"statistics": {
		Heading: "Storage statistics: in millctl stats for now",
		Text: "This page will show what Mill holds — items and bytes per account, store and space, and how they change. Mill records " +
			"them (statsproducer and the STORAGE_STATS processor, the space_stats table in PostgreSQL); the console does not show them yet.",
		Instead: []string{"millctl stats --by account|store|space [--account A] [--store S] [--space SP] [--json]",
			"millctl stats --account A --history [--since 2026-01-01]"},
	},
}

func (s *Server) otherRoutes(route func(string, auth.Role, func(http.ResponseWriter, *http.Request, *auth.User))) {
	for _, name := range []string{"dead-letters", "fleet", "statistics"} {
		route("GET /"+name, auth.RoleViewer, func(w http.ResponseWriter, r *http.Request, u *auth.User) {
			d := pending[name]
			if name == "dead-letters" { // the depth, at least
				if rows, _, err := s.samples.rows(r.Context()); err == nil {
					for _, row := range rows {
						if row.Key == queue.KeyDeadLetter && row.Error == "" {
							n := row.Total()
							d.Depth = &n
						}
					}
				}
			}
			s.render(w, r, http.StatusOK, "missing", page{Title: d.Heading, Nav: name, User: u, Data: d})
		})
	}
	route("GET /changes", auth.RoleViewer, s.changesPage)
}

type changesData struct {
	Changes []changelog.Change
	Next    string
	Where   string
}

func (s *Server) changesPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	changes, next, err := s.cfg.Changes.List(r.Context(), r.URL.Query().Get("after"), 50)
	if errors.Is(err, changelog.ErrBadToken) {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad page", "That page link is not valid.")
		return
	}
	if err != nil {
		s.fail(w, r, "reading the change log", err)
		return
	}
	where := ""
	if st, ok := s.cfg.Changes.(interface{ String() string }); ok {
		where = st.String()
	}
	s.render(w, r, http.StatusOK, "changes", page{Title: "Changes", Nav: "changes", User: u, Data: changesData{changes, next, where}})
}
