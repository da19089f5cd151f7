package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// EvidenceLog is an evidence log the console reads (pkg/evidence): its
// blobs and the note verifier key its checkpoints are checked with, as
// millctl evidence events and proof read it (--log, --key).
type EvidenceLog struct {
	Blobs    blob.Store
	Verifier note.Verifier
}

// maxItemEvents bounds the events an item's page lists (the newest).
const maxItemEvents = 100

// itemEvidence is what an item's page shows of the evidence log.
type itemEvidence struct {
	Events []*evidence.Event // newest first
	More   int               // events of the item not listed
	Size   int64             // the checkpoint's size
	Err    string
}

// itemEventsOf reads the log up to its latest checkpoint (each event
// checked against the signed checkpoint, as millctl evidence events does)
// and keeps the events of the item on any store: its object, or the
// source of a replication or repair. nil without a log.
func (s *Server) itemEventsOf(ctx context.Context, account, space, id string) *itemEvidence {
	if s.cfg.Evidence == nil {
		return nil
	}
	ev := &itemEvidence{}
	of := func(c evidence.Copy) bool { return c.Account == account && c.Space == space && c.ContentID == id }
	cp, err := evidence.Events(ctx, s.cfg.Evidence.Blobs, s.cfg.Evidence.Verifier, func(_ int64, e *evidence.Event) error {
		if of(e.Object) || (e.Source != nil && of(*e.Source)) {
			ev.Events = append(ev.Events, e)
		}
		return nil
	})
	if err != nil {
		s.cfg.Logger.Warn("console: item: evidence log", "err", err)
		ev.Events, ev.Err = nil, "the evidence log could not be read or does not verify"
		return ev
	}
	ev.Size = cp.Size
	slices.Reverse(ev.Events) // log order is append order: newest last
	if len(ev.Events) > maxItemEvents {
		ev.More, ev.Events = len(ev.Events)-maxItemEvents, ev.Events[:maxItemEvents]
	}
	return ev
}

// validEventID reports whether id is what an event ID may be (1 to 128 of
// A-Z a-z 0-9 . _ : -, evidence.Event.Validate's rule).
func validEventID(id string) bool {
	return id != "" && len(id) <= 128 && strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r))
	}) < 0
}

// evidenceProof downloads an event's inclusion proof, the JSON file
// millctl evidence proof writes (check it with millctl evidence
// check-proof).
func (s *Server) evidenceProof(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if s.cfg.Evidence == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No evidence log", "This console reads no evidence log.")
		return
	}
	id := r.URL.Query().Get("event")
	if !validEventID(id) {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad event", "An event ID is 1 to 128 of A-Z a-z 0-9 . _ : -.")
		return
	}
	p, err := evidence.Prove(r.Context(), s.cfg.Evidence.Blobs, s.cfg.Evidence.Verifier, id)
	if errors.Is(err, evidence.ErrNoEvent) {
		s.errorPage(w, r, u, http.StatusNotFound, "No such event", "The evidence log holds no event with that ID.")
		return
	}
	if err != nil {
		s.cfg.Logger.Error("console: evidence proof", "event", id, "err", err)
		s.errorPage(w, r, u, http.StatusServiceUnavailable, "No proof", "The evidence log could not be read or does not verify.")
		return
	}
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		s.fail(w, r, "encoding the proof", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Disposition", `attachment; filename="evidence-proof-`+id+`.json"`)
	_, _ = w.Write(append(out, '\n'))
}
