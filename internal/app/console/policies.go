package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
	"github.com/millfleet/mill/pkg/stores"
)

// historyLimit is how many versions the history page shows.
const historyLimit = 100

func (s *Server) policyRoutes(route routeFunc) {
	route("GET /policies", auth.RoleViewer, s.policiesPage)
	route("GET /policies/{account}", auth.RoleViewer, s.policyPage)
	route("GET /policies/{account}/history", auth.RoleViewer, s.historyPage)
	route("GET /policies/{account}/history/{version}", auth.RoleViewer, s.versionPage)
	route("POST /policies/{account}/listed", auth.RoleAdmin, s.setListed)
	route("GET /policies/{account}/edit", auth.RoleAdmin, s.editPage)
	route("POST /policies/{account}/edit", auth.RoleAdmin, s.editPost)
	route("POST /policies/{account}/save", auth.RoleAdmin, s.savePolicy)
	route("POST /policies/{account}/restore", auth.RoleAdmin, s.restorePolicy)
	route("GET /policies/{account}/delete", auth.RoleAdmin, s.deletePage)
	route("POST /policies/{account}/delete", auth.RoleAdmin, s.deletePolicy)
}

// accountRow is one line of the policies page.
type accountRow struct {
	ID         string
	Status     string
	InRegistry bool
	Stores     []stores.Store
	Listed     bool
	HasPolicy  bool
	Spaces     int
	Defaults   string
	Problem    string // the policy file does not parse
}

type policiesData struct {
	Accounts    []accountRow
	RegistryErr string
	ListedErr   string
	Files       string
}

// unrecordedNotice is the notice (?msg=unrecorded) of a change the change
// log could not record, on every page that makes changes.
const unrecordedNotice = "The change was made, but the change log could not record it (see the console's log)."

// messages of the notice shown after a redirect (?msg=…): fixed texts, so
// nothing from the query string is shown as is.
var notices = map[string]string{
	"saved":      "Saved. Workman and the producers use it within %s (their policy cache).",
	"created":    "Created. Workman and the producers use it within %s (their policy cache).",
	"restored":   "Restored as the current version. Workman and the producers use it within %s.",
	"deleted":    "Deleted; the account left duplication-accounts.json. Earlier versions stay in the history.",
	"listed":     "The account is listed in duplication-accounts.json: it is duplicated.",
	"unlisted":   "The account left duplication-accounts.json: it is no longer duplicated.",
	"unchanged":  "Nothing to change.",
	"listfailed": "Adding the account to duplication-accounts.json failed (see the console's log); use the switch on the policies page.",
	"unrecorded": unrecordedNotice,
}

func (s *Server) notice(r *http.Request) string {
	out := noticeTexts(r, notices)
	for i, t := range out {
		if strings.Contains(t, "%s") {
			out[i] = fmt.Sprintf(t, human(s.cfg.PolicyRefresh))
		}
	}
	return strings.Join(out, " ")
}

// noticeTexts are the texts of the fixed notices the ?msg= keys of r name
// (a key not in texts is ignored: the query is anyone's).
func noticeTexts(r *http.Request, texts map[string]string) []string {
	var out []string
	for _, k := range r.URL.Query()["msg"] {
		if t, ok := texts[k]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) policiesPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	ctx := r.Context()
	d := policiesData{Files: s.cfg.Files.Where("")}
	reg, err := s.editor.Registry(ctx)
	if err != nil {
		d.RegistryErr = err.Error()
		reg = &stores.Registry{}
	}
	listed, err := s.editor.Listed(ctx)
	if err != nil {
		d.ListedErr = err.Error()
	}
	seen := map[string]bool{}
	add := func(id string, a *stores.Account) {
		row := accountRow{ID: id, Listed: slices.Contains(listed, id)}
		if a != nil {
			row.InRegistry, row.Status, row.Stores = true, string(a.Status), a.Stores
		}
		doc, err := s.editor.Load(ctx, id)
		switch {
		case err != nil:
			row.Problem = err.Error()
		case doc.ParseErr != nil:
			row.HasPolicy, row.Problem = true, "the file does not parse: "+firstLine(doc.ParseErr.Error())
		case doc.Exists:
			row.HasPolicy = true
			row.Spaces = len(doc.Policy.Spaces())
			row.Defaults = policyedit.Format(doc.Policy.Default)
		}
		d.Accounts = append(d.Accounts, row)
		seen[id] = true
	}
	for i := range reg.Accounts {
		add(reg.Accounts[i].ID, &reg.Accounts[i])
	}
	for _, id := range listed { // listed but not registered: shown, to be fixed
		if !seen[id] {
			add(id, nil)
		}
	}
	s.render(w, r, http.StatusOK, "policies", page{Title: "Policies", Nav: "policies", User: u, Msg: s.notice(r), Data: d})
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// spaceView is one listed space: its own store policies and, when it has
// none, what applies to it (pkg/policy decides: the defaults, or nothing).
type spaceView struct {
	ID        string
	Policies  []policy.StorePolicy
	Effective string
}

// policyData is the policy page.
type policyData struct {
	Account   string
	Doc       *policyedit.Doc
	Listed    bool
	InReg     bool
	Stores    []stores.Store
	Spaces    []spaceView
	Default   string
	Ignore    []string
	ParseErrs []string
	Files     string
}

// account returns the {account} of the path, or writes a 404.
func (s *Server) account(w http.ResponseWriter, r *http.Request) (string, bool) {
	a := r.PathValue("account")
	if err := configstore.CheckName(policy.FileName(a)); err != nil || a == "" {
		s.errorPage(w, r, nil, http.StatusNotFound, "No such account", "That is not an account id.")
		return "", false
	}
	return a, true
}

// policyChanged records the change c to the policy of acct and sends the
// user to the account's page with the notice msg (and, when the change
// log could not record c, the unrecorded one).
func (s *Server) policyChanged(w http.ResponseWriter, r *http.Request, u *auth.User, acct string, c changelog.Change, msg string) {
	if err := s.record(r.Context(), u, c); err != nil {
		msg += "&msg=unrecorded"
	}
	http.Redirect(w, r, "/policies/"+url.PathEscape(acct)+"?msg="+msg, http.StatusSeeOther)
}

// accountForm returns the {account} of the path after reading the posted
// form (postForm: at most limit bytes, its fields taken by read), or
// writes the error page and returns false.
func (s *Server) accountForm(w http.ResponseWriter, r *http.Request, u *auth.User, limit int64, read func(f *form)) (string, bool) {
	acct, ok := s.account(w, r)
	return acct, ok && s.postForm(w, r, u, limit, read)
}

// accountDoc returns the {account} of the path and its policy file, or
// writes the error page.
func (s *Server) accountDoc(w http.ResponseWriter, r *http.Request) (string, *policyedit.Doc, bool) {
	acct, ok := s.account(w, r)
	if !ok {
		return "", nil, false
	}
	doc, err := s.editor.Load(r.Context(), acct)
	if err != nil {
		s.fail(w, r, "reading the policy", err)
		return "", nil, false
	}
	return acct, doc, true
}

func (s *Server) policyPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	acct, doc, ok := s.accountDoc(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	d := policyData{Account: acct, Doc: doc, Files: s.cfg.Files.Where(policy.FileName(acct))}
	if reg, err := s.editor.Registry(ctx); err == nil {
		if a := reg.Account(acct); a != nil {
			d.InReg, d.Stores = true, a.Stores
		}
	}
	listed, err := s.editor.Listed(ctx)
	if err == nil {
		d.Listed = slices.Contains(listed, acct)
	}
	if doc.ParseErr != nil {
		d.ParseErrs = policyedit.Messages(doc.ParseErr)
	}
	if doc.Policy != nil {
		for _, row := range policyedit.DraftOf(doc.Policy).Spaces {
			v := spaceView{ID: row.ID, Policies: row.Policies}
			if len(row.Policies) == 0 {
				v.Effective = policyedit.Format(doc.Policy.StorePolicies(row.ID))
			}
			d.Spaces = append(d.Spaces, v)
		}
		d.Default = policyedit.Format(doc.Policy.Default)
		d.Ignore = doc.Policy.Ignore
	}
	if !doc.Exists && !d.InReg {
		s.errorPage(w, r, u, http.StatusNotFound, "No such account", fmt.Sprintf("%q is not in the registry and has no policy file.", acct))
		return
	}
	s.render(w, r, http.StatusOK, "policy", page{Title: "Policy of " + acct, Nav: "policies", User: u, Msg: s.notice(r), Data: d})
}

// setListed is the switch of duplication-accounts.json.
func (s *Server) setListed(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var listed bool
	var back string
	acct, ok := s.accountForm(w, r, u, 4<<10, func(f *form) {
		listed, back = f.oneOf("listed", "true", "false") == "true", f.opt("back")
		if back != "" && back != "account" {
			f.problem("the field \"back\" is %s; want account or nothing", quoteSafe(back))
		}
	})
	if !ok {
		return
	}
	changed, err := s.editor.SetListed(r.Context(), acct, listed, configstore.Meta{Author: u.Name})
	switch {
	case errors.Is(err, policyedit.ErrNoPolicy):
		s.errorPage(w, r, u, http.StatusConflict, "No policy to list", "Create the account's policy first; listing an account without one would stop the producers at it.")
		return
	case err != nil:
		s.fail(w, r, "changing duplication-accounts.json", err)
		return
	}
	msg := "unchanged"
	if changed {
		action, summary := "accounts.unlist", "removed from duplication-accounts.json"
		msg = "unlisted"
		if listed {
			action, summary, msg = "accounts.list", "added to duplication-accounts.json", "listed"
		}
		if err := s.record(r.Context(), u, changelog.Change{Action: action, Target: acct, Summary: summary}); err != nil {
			msg += "&msg=unrecorded"
		}
	}
	to := "/policies"
	if back == "account" {
		to = "/policies/" + url.PathEscape(acct)
	}
	http.Redirect(w, r, to+"?msg="+msg, http.StatusSeeOther)
}

// deleteData is the confirmation page of a delete.
type deleteData struct {
	Account string
	Doc     *policyedit.Doc
	Listed  bool
	Error   string
}

func (s *Server) deletePage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	acct, doc, ok := s.accountDoc(w, r)
	if !ok {
		return
	}
	if !doc.Exists {
		s.errorPage(w, r, u, http.StatusNotFound, "No policy", "This account has no policy file to delete.")
		return
	}
	listed, _ := s.editor.Listed(r.Context())
	s.render(w, r, http.StatusOK, "delete", page{Title: "Delete the policy of " + acct, Nav: "policies", User: u,
		Data: deleteData{Account: acct, Doc: doc, Listed: slices.Contains(listed, acct)}})
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var base, confirm string
	acct, ok := s.accountForm(w, r, u, 8<<10, func(f *form) {
		base, confirm = f.nonEmpty("base"), f.req("confirm")
	})
	if !ok {
		return
	}
	ctx := r.Context()
	if confirm != acct {
		doc, err := s.editor.Load(ctx, acct)
		if err != nil {
			s.fail(w, r, "reading the policy", err)
			return
		}
		s.render(w, r, http.StatusUnprocessableEntity, "delete", page{Title: "Delete the policy of " + acct, Nav: "policies", User: u,
			Data: deleteData{Account: acct, Doc: doc, Error: "Type the account id to confirm."}})
		return
	}
	before, _ := s.editor.Load(ctx, acct)
	err := s.editor.Delete(ctx, acct, base, configstore.Meta{Author: u.Name, Action: "delete"})
	switch {
	case errors.Is(err, policyedit.ErrConflict):
		s.errorPage(w, r, u, http.StatusConflict, "Changed meanwhile",
			"The policy changed after you opened the confirmation, so it was not deleted. Look at the latest version first.")
		return
	case err != nil:
		s.fail(w, r, "deleting the policy", err)
		return
	}
	c := changelog.Change{Action: "policy.delete", Target: acct, Summary: "deleted " + policy.FileName(acct) + " (and unlisted the account)"}
	if before != nil {
		c.Before = before.Version.ID
		if before.Policy != nil {
			c.Detail = policyedit.Summary(policyedit.Diff(before.Policy, nil))
		}
	}
	s.policyChanged(w, r, u, acct, c, "deleted")
}
