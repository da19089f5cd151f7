package console

import (
	"errors"
	"net/http"

	"github.com/millfleet/mill/internal/app/console/auth"
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

// Pages of features that are not there yet, or not configured. Each says
// what is missing and what to use meanwhile.
var pending = map[string]missingData{
	"dead-letters": {
		Heading: "Dead letters: not configured",
		Text: "This console was started without the dead-letter queue, so it cannot list, redrive or purge dead letters. " +
			"millctl console and millctl dev --console configure it.",
		Instead: []string{"millctl dlq list [--type T] [--source Q] [--error TEXT]", "millctl dlq show MESSAGE_ID",
			"millctl dlq redrive --dry-run …, then without --dry-run", "millctl dlq purge …"},
	},
	"fleet": {
		Heading: "Fleet: no fleet registry",
		Text: "This console reads no fleet registry (millctl console --fleet-table names its DynamoDB table; it is empty here), " +
			"so it cannot show the Workman instances or pause and resume them.",
		Instead: []string{"millctl fleet [--watch]", "millctl pause TYPE|QUEUE, millctl resume TYPE|QUEUE",
			"each Workman's /readyz and /metrics (--http-addr)"},
	},
	"statistics": {
		Heading: "Storage statistics need the database",
		Text: "Mill records what it holds (statsproducer and the STORAGE_STATS processor, the space_stats table in PostgreSQL); " +
			"this console was started without --database-url, so it cannot read them.",
		Instead: []string{"millctl stats --by account|store|space [--account A] [--store S] [--space SP] [--json]",
			"millctl stats --account A --history [--since 2026-01-01]"},
	},
}

// pendingPage shows what is missing instead of a page.
func (s *Server) pendingPage(name string) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, u *auth.User) {
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
	}
}

// optionalRoutes registers the parts whose source a console may lack:
// with it, the part's pages; without, at the part's page (GET /NAME), the
// pending page that says what is missing.
func (s *Server) optionalRoutes(route routeFunc) {
	for _, p := range []struct {
		name   string // the part's page and its entry of pending
		ready  bool
		routes func(routeFunc)
	}{
		{"dead-letters", s.dl != nil, s.deadLetterRoutes},
		{"fleet", s.cfg.Fleet != nil, s.fleetRoutes},
		{"statistics", s.cfg.Stats != nil, s.statsRoutes},
	} {
		if !p.ready {
			route("GET /"+p.name, auth.RoleViewer, s.pendingPage(p.name))
			continue
		}
		p.routes(route)
	}
}

func (s *Server) otherRoutes(route routeFunc) {
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
