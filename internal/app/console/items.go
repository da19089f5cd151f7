package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/stores"
)

// itemsPage is how many index rows a search page lists.
const itemsPage = 50

func (s *Server) itemRoutes(route routeFunc) {
	route("GET /items", auth.RoleViewer, s.itemsPage)
	route("GET /item", auth.RoleViewer, s.itemPage)
	route("GET /item/audit", auth.RoleViewer, s.itemAuditPage)
	route("GET /item/evidence/proof", auth.RoleViewer, s.evidenceProof)
	route("POST /item/restore", auth.RoleAdmin, s.restore)
}

type itemsData struct {
	Account, Space, Prefix string
	Accounts               []string
	Rows                   []contentindex.Entry
	Searched               bool
	Next                   string // the next page's link
	Missing                string
}

// noIndex tells that no content index is configured.
func (s *Server) noIndex(w http.ResponseWriter, r *http.Request, u *auth.User) bool {
	if _, ok := s.cfg.Index.(contentindex.Searcher); ok {
		return false
	}
	s.render(w, r, http.StatusOK, "missing", page{Title: "Items", Nav: "items", User: u, Data: missingData{
		Heading: "Items need the database",
		Text:    "The console was started without --database-url, so it cannot read the content index (PostgreSQL). Start it with the same --database-url as Workman.",
		Instead: []string{"millctl content versions ACCOUNT STORE SPACE CONTENT_ID", "millctl audit …"},
	}})
	return true
}

// maxID bounds what a search or item link may name: content IDs are at
// most 1,024 bytes in every store Mill writes to.
const maxID = 1024

func (s *Server) itemsPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if s.noIndex(w, r, u) {
		return
	}
	q := r.URL.Query()
	d := itemsData{Account: q.Get("account"), Space: q.Get("space"), Prefix: q.Get("prefix")}
	if reg, err := s.editor.Registry(r.Context()); err == nil {
		for _, a := range reg.Accounts {
			d.Accounts = append(d.Accounts, a.ID)
		}
	}
	after := contentindex.Cursor{ContentID: q.Get("after"), StoreID: q.Get("afterstore")}
	for _, v := range []string{d.Account, d.Space, d.Prefix, after.ContentID, after.StoreID} {
		if len(v) > maxID {
			s.errorPage(w, r, u, http.StatusBadRequest, "Bad search", "A search names at most 1,024 bytes per field.")
			return
		}
	}
	if d.Account != "" || d.Space != "" {
		if d.Account == "" || d.Space == "" {
			s.errorPage(w, r, u, http.StatusBadRequest, "Bad search", "A search needs an account and a space.")
			return
		}
		rows, more, err := s.cfg.Index.(contentindex.Searcher).Search(r.Context(), contentindex.Query{
			Account: d.Account, SpaceID: d.Space, Prefix: d.Prefix, After: after, Limit: itemsPage})
		if err != nil {
			s.fail(w, r, "searching the content index", err)
			return
		}
		d.Rows, d.Searched = rows, true
		if more {
			c := contentindex.CursorOf(rows[len(rows)-1])
			d.Next, _ = urlQuery("/items", "account", d.Account, "space", d.Space, "prefix", d.Prefix, "after", c.ContentID, "afterstore", c.StoreID)
		}
	}
	s.render(w, r, http.StatusOK, "items", page{Title: "Items", Nav: "items", User: u, Data: d})
}

// copyRow is one store's copy of an item.
type copyRow struct {
	StoreID   string
	Kind      string
	Entry     *contentindex.Entry // nil: the index has no row
	Info      *storage.Info       // nil: not read (or absent)
	InfoErr   string
	CRC64     string // the provider's CRC-64/NVME, when it reports one
	Verdict   *bitlog.Verdict
	Audit     *auditlog.Entry
	History   *auditHistory // the newest audit entries; nil: no audit log
	Versions  []storage.Version
	Policies  []policy.StorePolicy // the store policies of the space that name this store
	CanRevive bool                 // a version can be restored
}

type itemData struct {
	Account, Space, ID string
	Copies             []copyRow
	Ignored            bool // the policy does not duplicate the space
	NoPolicy           bool
	CanRestore         bool // the console can restore (Stores and AuditQueue)
	Self               string
	Evidence           *itemEvidence // nil: no evidence log
}

// registry reads the registry, or writes the error page.
func (s *Server) registry(w http.ResponseWriter, r *http.Request) (*stores.Registry, bool) {
	reg, err := s.editor.Registry(r.Context())
	if err != nil {
		s.fail(w, r, "reading the registry", err)
		return nil, false
	}
	return reg, true
}

// hasVersions reports whether a copy has versions (for the template).
func hasVersions(cs []copyRow) bool {
	for _, c := range cs {
		if len(c.Versions) > 0 {
			return true
		}
	}
	return false
}

// itemParams reads and checks the item named by a query or form.
func itemParams(get func(string) string) (account, space, id string, err error) {
	account, space, id = get("account"), get("space"), get("id")
	if account == "" || space == "" || id == "" {
		return "", "", "", errors.New("an item is named by its account, space and content ID")
	}
	if len(account) > maxID || len(space) > maxID || len(id) > maxID || !utf8.ValidString(id) {
		return "", "", "", errors.New("an item's names are UTF-8 text of at most 1,024 bytes")
	}
	return account, space, id, nil
}

func (s *Server) itemPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if s.noIndex(w, r, u) {
		return
	}
	account, space, id, err := itemParams(r.URL.Query().Get)
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad item", err.Error())
		return
	}
	ctx := r.Context()
	reg, ok := s.registry(w, r)
	if !ok {
		return
	}
	acct := reg.Account(account)
	if acct == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No such account", "That account is not in the registry.")
		return
	}
	d := itemData{Account: account, Space: space, ID: id, CanRestore: s.cfg.Stores != nil && s.cfg.AuditQueue != nil}
	d.Self, _ = urlQuery("/item", "account", account, "space", space, "id", id)
	doc, err := s.editor.Load(ctx, account)
	var sps []policy.StorePolicy
	if err == nil && doc.Policy != nil {
		sps = doc.Policy.StorePolicies(space)
		d.Ignored = !doc.Policy.Duplicated(space)
	} else {
		d.NoPolicy = true
	}
	for _, st := range acct.Stores {
		c := s.copyOf(ctx, account, st, space, id, sps)
		c.History = s.auditHistoryOf(ctx, account, st.ID, space, id, "", itemAuditRows)
		d.Copies = append(d.Copies, c)
	}
	d.Evidence = s.itemEventsOf(ctx, account, space, id)
	s.render(w, r, http.StatusOK, "item", page{Title: "Item " + id, Nav: "items", User: u, Data: d,
		Msg: itemNotices[r.URL.Query().Get("msg")]})
}

var itemNotices = map[string]string{
	"restored":   "Restored. The audit log records it and duplication copies it to the other stores.",
	"unrecorded": unrecordedNotice,
}

// copyOf reads what Mill knows of one store's copy; a source that cannot
// be read leaves its part empty (and is logged).
func (s *Server) copyOf(ctx context.Context, account string, st stores.Store, space, id string, sps []policy.StorePolicy) copyRow {
	c := copyRow{StoreID: st.ID, Kind: string(st.Kind)}
	item := contentindex.Item{Account: account, StoreID: st.ID, SpaceID: space, ContentID: id}
	if e, err := s.cfg.Index.Get(ctx, item); err == nil {
		c.Entry = e
	} else if !errors.Is(err, contentindex.ErrNotFound) {
		s.cfg.Logger.Warn("console: item: content index", "item", item.String(), "err", err)
	}
	if s.cfg.BitLog != nil {
		c.Verdict = verdictOf(ctx, s.cfg.BitLog, item)
	}
	if s.cfg.Audit != nil {
		if e, err := s.cfg.Audit.Latest(ctx, account, st.ID, space, id); err == nil {
			c.Audit = e
		}
	}
	for _, p := range sps {
		if p.SrcStoreID == st.ID || p.DestStoreID == st.ID {
			c.Policies = append(c.Policies, p)
		}
	}
	if s.cfg.Stores != nil {
		p, err := s.cfg.Stores.Open(ctx, account, st.ID)
		if err != nil {
			c.InfoErr = "the store could not be opened"
			s.cfg.Logger.Warn("console: item: open store", "account", account, "store", st.ID, "err", err)
			return c
		}
		if info, err := p.Head(ctx, space, id); err == nil {
			c.Info = info
			if v, ok := strings.CutPrefix(info.ProviderChecksum, "crc64nvme:"); ok {
				c.CRC64 = v
			}
		} else if errors.Is(err, storage.ErrNotFound) {
			c.InfoErr = "not in the store"
		} else {
			c.InfoErr = "the store could not be read"
			s.cfg.Logger.Warn("console: item: head", "item", item.String(), "err", err)
		}
		if rc, ok := p.(storage.Recoverer); ok {
			if vs, err := rc.Versions(ctx, space, id); err == nil {
				c.Versions = vs
			}
		}
	}
	return c
}

// verdictOf is the copy's latest fresh verdict, or nil: Verdicts lists a
// space from a content ID on, so it starts just before the item's.
func verdictOf(ctx context.Context, l bitlog.Verdicts, it contentindex.Item) *bitlog.Verdict {
	vs, _, err := l.Verdicts(ctx, it.Account, it.StoreID, it.SpaceID, before(it.ContentID), 2)
	if err != nil {
		return nil
	}
	for _, v := range vs {
		if v.ContentID == it.ContentID {
			return &v
		}
	}
	return nil
}

// before returns a string less than id such that no other string lies
// between it and id except ones that are themselves greater than
// before(id) and less than id by code points: id's last code point made
// one smaller followed by the largest code point (checked by verdictOf,
// which compares what it gets).
func before(id string) string {
	r, n := utf8.DecodeLastRuneInString(id)
	head := id[:len(id)-n]
	if r == 0 || r == utf8.RuneError {
		return head
	}
	r--
	if r >= 0xD800 && r <= 0xDFFF {
		r = 0xD7FF
	}
	return head + string(r) + strings.Repeat(string(utf8.MaxRune), 4)
}

// restore makes a version of one store's copy current again, through the
// audited provider, as millctl content restore does; admins only.
func (s *Server) restore(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var store, version, account, space, id string
	var perr error
	if !s.postForm(w, r, u, 8<<10, func(f *form) {
		store, version = f.nonEmpty("store"), f.nonEmpty("version")
		account, space, id, perr = itemParams(f.nonEmpty)
	}) {
		return
	}
	if perr != nil || len(store) > maxID || len(version) > maxID {
		s.errorPage(w, r, u, http.StatusBadRequest, "Not restored", "That is not an item's version.")
		return
	}
	if s.cfg.Stores == nil || s.cfg.AuditQueue == nil {
		s.errorPage(w, r, u, http.StatusConflict, "Not restored", "This console cannot restore: it opens no stores, or has no audit queue.")
		return
	}
	ctx := r.Context()
	reg, ok := s.registry(w, r)
	if !ok {
		return
	}
	st, err := reg.Store(account, store)
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Not restored", "That store is not in the registry.")
		return
	}
	p, err := s.cfg.Stores.Open(ctx, account, store)
	if err != nil {
		s.fail(w, r, "opening the store", err)
		return
	}
	ap, err := audited.New(p, s.cfg.AuditQueue, audited.Config{Account: account, StoreID: store, StoreKind: st.Kind, UserID: u.Name})
	if err != nil {
		s.fail(w, r, "auditing the store", err)
		return
	}
	info, err := ap.Restore(ctx, space, id, version)
	if errors.Is(err, storage.ErrNotFound) {
		s.errorPage(w, r, u, http.StatusNotFound, "Not restored", "That version no longer exists (or the space was deleted): nothing was changed.")
		return
	}
	if err != nil {
		s.fail(w, r, "restoring the version", err)
		return
	}
	msg := "restored"
	target := fmt.Sprintf("%s/%s/%s/%s", account, store, space, id)
	if err := s.record(ctx, u, changelog.Change{Action: "item.restore", Target: target,
		Summary: fmt.Sprintf("restored version %s of %s (%d bytes, md5 %s)", version, target, info.Size, info.Checksum)}); err != nil {
		msg = "unrecorded"
	}
	to, _ := urlQuery("/item", "account", account, "space", space, "id", id, "msg", msg)
	http.Redirect(w, r, to, http.StatusSeeOther)
}
