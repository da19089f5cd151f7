package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/auditlog"
)

// An item's audit history (auditlog.ItemHistory): the newest entries of
// each store's copy on the item's page, every entry, newest first, a page
// at a time on /item/audit.

// itemAuditRows is how many entries of each copy the item page shows;
// auditPageRows how many /item/audit shows a page.
const (
	itemAuditRows = 10
	auditPageRows = 50
)

// auditHistory is a page of one copy's audit history.
type auditHistory struct {
	Entries []auditlog.Entry
	Older   string // the link to the next (older) page; "" when none
	Err     string // why there is no history
}

// auditHistoryOf reads a page of the copy's history; nil when the console
// has no audit log.
func (s *Server) auditHistoryOf(ctx context.Context, account, store, space, id, after string, n int) *auditHistory {
	if s.cfg.Audit == nil {
		return nil
	}
	h := &auditHistory{}
	ih, ok := s.cfg.Audit.(auditlog.ItemHistory)
	if !ok {
		h.Err = "this audit log lists no history (only the latest event)"
		return h
	}
	es, next, err := ih.ItemHistory(ctx, account, store, space, id, after, n)
	if err != nil {
		if errors.Is(err, auditlog.ErrBadPageToken) {
			h.Err = "that is not a page of this item's history"
		} else {
			h.Err = "the audit log could not be read"
			s.cfg.Logger.Warn("console: item: audit history", "account", account, "store", store, "err", err)
		}
		return h
	}
	h.Entries = es
	if next != "" {
		h.Older, _ = urlQuery("/item/audit", "account", account, "space", space, "id", id, "store", store, "after", next)
	}
	return h
}

type itemAuditData struct {
	Account, Space, ID, StoreID string
	Item                        string // the item page's link
	Newest                      string // the first page's link, when this is not it
	History                     *auditHistory
}

// itemAuditPage is one copy's audit history, newest first, a page at a
// time.
func (s *Server) itemAuditPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	q := r.URL.Query()
	account, space, id, err := itemParams(q.Get)
	store, after := q.Get("store"), q.Get("after")
	if err != nil || store == "" || len(store) > maxID || len(after) > 4*maxID {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad item", "An item's audit history is named by its account, store, space and content ID.")
		return
	}
	if s.cfg.Audit == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No audit log", "This console reads no audit log.")
		return
	}
	reg, ok := s.registry(w, r)
	if !ok {
		return
	}
	if _, err := reg.Store(account, store); err != nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No such store", "That account has no such store in the registry.")
		return
	}
	d := itemAuditData{Account: account, Space: space, ID: id, StoreID: store,
		History: s.auditHistoryOf(r.Context(), account, store, space, id, after, auditPageRows)}
	d.Item, _ = urlQuery("/item", "account", account, "space", space, "id", id)
	if after != "" {
		d.Newest, _ = urlQuery("/item/audit", "account", account, "space", space, "id", id, "store", store)
	}
	status := http.StatusOK
	if d.History.Err != "" && after != "" {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, "itemaudit", page{Title: "Audit history of item " + id, Nav: "items", User: u, Data: d})
}
