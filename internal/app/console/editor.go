package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
	"github.com/millfleet/mill/pkg/stores"
)

// Limits on what one editor form may hold.
const (
	maxEditorForm  = 2 << 20
	maxEditorRows  = 5000
	maxRowPolicies = 100
)

// editorData is the editor page.
type editorData struct {
	Account  string
	Base     string // ETag of the version the edit started from; "" to create
	Creating bool
	List     bool // on create: add the account to duplication-accounts.json
	BaseVer  configstore.Version
	Rows     []rowView
	Default  []ruleView
	Ignore   string
	Stores   []storeChoice
	Checked  bool
	Problems policyedit.Problems
	// Changed: the file changed since the edit started (a save will be
	// refused).
	Changed bool
}

type rowView struct {
	Index    int
	ID       string
	Rules    []ruleView
	Problems []string
}

type ruleView struct {
	Index    int
	Src, Dst string
}

type storeChoice struct {
	ID, Label string
}

// previewData is the preview of a save.
type previewData struct {
	Account  string
	Base     string
	List     bool
	Creating bool
	JSON     string
	Changes  []policyedit.Change
	Changed  bool // the file changed since the edit started
	Current  configstore.Version
}

// conflictData is the page of a refused save.
type conflictData struct {
	Account string
	Current *policyedit.Doc
	Theirs  []policyedit.Change // what the other editor changed, from the edit's base
	Yours   []policyedit.Change // what saving yours now would change
	JSON    string
}

// editor loads what every editor page needs: the account's stores and the
// current policy. It writes an error page and returns false when the
// account cannot be edited.
func (s *Server) editorContext(w http.ResponseWriter, r *http.Request, u *auth.User, acct string) (*stores.Account, *policyedit.Doc, bool) {
	ctx := r.Context()
	reg, err := s.editor.Registry(ctx)
	if err != nil {
		s.fail(w, r, "reading the registry", err)
		return nil, nil, false
	}
	a := reg.Account(acct)
	if a == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "Not in the registry",
			fmt.Sprintf("Account %q is not in %s, so its store ids cannot be checked. Add it to the registry first.", acct, stores.FileName))
		return nil, nil, false
	}
	doc, err := s.editor.Load(ctx, acct)
	if err != nil {
		s.fail(w, r, "reading the policy", err)
		return nil, nil, false
	}
	return a, doc, true
}

func (s *Server) editPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	acct, ok := s.account(w, r)
	if !ok {
		return
	}
	a, doc, ok := s.editorContext(w, r, u, acct)
	if !ok {
		return
	}
	if doc.Exists && doc.Policy == nil {
		s.errorPage(w, r, u, http.StatusConflict, "The file does not parse",
			"The policy file has errors (see the account's page); restore a good version from the history, or fix it with `millctl policy put`.")
		return
	}
	d := policyedit.DraftOf(doc.Policy)
	if !doc.Exists {
		d = policyedit.Draft{Default: []policy.StorePolicy{defaultRule(a)}}
	}
	s.renderEditor(w, r, u, http.StatusOK, a, doc, d, doc.Version.ETag, !doc.Exists, false)
}

func (s *Server) renderEditor(w http.ResponseWriter, r *http.Request, u *auth.User, status int, a *stores.Account, doc *policyedit.Doc,
	d policyedit.Draft, base string, list, check bool) {
	ed := editorData{Account: a.ID, Base: base, Creating: base == "", List: list, Ignore: strings.Join(d.Ignore, "\n")}
	if doc.Exists {
		ed.BaseVer = doc.Version
		ed.Changed = doc.Version.ETag != base
	} else {
		ed.Changed = base != ""
	}
	for _, st := range a.Stores {
		label := st.ID + " — " + string(st.Kind)
		if st.Primary {
			label += ", primary"
		}
		ed.Stores = append(ed.Stores, storeChoice{ID: st.ID, Label: label})
	}
	if check {
		ed.Checked = true
		reg, err := s.editor.Registry(r.Context())
		if err != nil {
			s.fail(w, r, "reading the registry", err)
			return
		}
		ed.Problems = policyedit.Check(d, reg.Known(a.ID))
		if !ed.Problems.OK() && status == http.StatusOK {
			status = http.StatusUnprocessableEntity
		}
	}
	for i, row := range d.Spaces {
		rv := rowView{Index: i, ID: row.ID}
		for j, sp := range row.Policies {
			rv.Rules = append(rv.Rules, ruleView{Index: j, Src: sp.SrcStoreID, Dst: sp.DestStoreID})
		}
		if ed.Checked {
			rv.Problems = ed.Problems.Spaces[i]
		}
		ed.Rows = append(ed.Rows, rv)
	}
	for j, sp := range d.Default {
		ed.Default = append(ed.Default, ruleView{Index: j, Src: sp.SrcStoreID, Dst: sp.DestStoreID})
	}
	s.render(w, r, status, "editor", page{Title: "Edit the policy of " + a.ID, Nav: "policies", User: u, Data: ed})
}

// editPost applies an editor action (add or remove a row, check, preview)
// to the draft the form holds and shows the result. Nothing is written.
func (s *Server) editPost(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var j, base, op string
	var list, checked bool
	acct, ok := s.accountForm(w, r, u, maxEditorForm, func(f *form) {
		// base is empty when the edit creates the policy.
		j, base, list, op, checked = f.opt("policy"), f.req("base"), f.flag("list", "on"), f.opt("op"), f.flag("checked", "1")
	})
	if !ok {
		return
	}
	a, doc, ok := s.editorContext(w, r, u, acct)
	if !ok {
		return
	}
	var d policyedit.Draft
	if j != "" { // back from a preview or a conflict
		p, err := policy.Parse("policy", []byte(j))
		if err != nil {
			s.errorPage(w, r, u, http.StatusBadRequest, "Bad policy", strings.Join(policyedit.Messages(err), "; "))
			return
		}
		d = policyedit.DraftOf(p)
	} else {
		var err error
		if d, err = parseDraft(r.PostForm); err != nil {
			s.errorPage(w, r, u, http.StatusBadRequest, "Bad form", err.Error())
			return
		}
	}
	if op == "preview" {
		s.preview(w, r, u, a, doc, d, base, list)
		return
	}
	if err := applyOp(&d, op, a); err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad action", err.Error())
		return
	}
	// Structural actions keep the problems shown so far up to date too.
	s.renderEditor(w, r, u, http.StatusOK, a, doc, d, base, list, op == "" || op == "check" || checked)
}

// preview shows what a save would change, or the editor with the problems.
func (s *Server) preview(w http.ResponseWriter, r *http.Request, u *auth.User, a *stores.Account, doc *policyedit.Doc, d policyedit.Draft, base string, list bool) {
	reg, err := s.editor.Registry(r.Context())
	if err != nil {
		s.fail(w, r, "reading the registry", err)
		return
	}
	if pr := policyedit.Check(d, reg.Known(a.ID)); !pr.OK() {
		s.renderEditor(w, r, u, http.StatusUnprocessableEntity, a, doc, d, base, list, true)
		return
	}
	p := d.Policy()
	data, err := p.Marshal()
	if err != nil {
		s.fail(w, r, "writing the policy", err)
		return
	}
	pd := previewData{Account: a.ID, Base: base, List: list, Creating: base == "", JSON: string(data), Current: doc.Version}
	pd.Changed = (doc.Exists && doc.Version.ETag != base) || (!doc.Exists && base != "")
	pd.Changes = policyedit.Diff(doc.Policy, p)
	s.render(w, r, http.StatusOK, "preview", page{Title: "Preview of " + a.ID, Nav: "policies", User: u, Data: pd})
}

// savePolicy stores the previewed policy when the file is still at the
// version the edit started from.
func (s *Server) savePolicy(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var j, base string
	var list bool
	acct, ok := s.accountForm(w, r, u, maxEditorForm, func(f *form) {
		// base is empty when the save creates the policy.
		j, base, list = f.nonEmpty("policy"), f.req("base"), f.flag("list", "on")
	})
	if !ok {
		return
	}
	ctx := r.Context()
	a, doc, ok := s.editorContext(w, r, u, acct)
	if !ok {
		return
	}
	p, err := policy.Parse("policy", []byte(j))
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad policy", strings.Join(policyedit.Messages(err), "; "))
		return
	}
	action := "save"
	if base == "" {
		action = "create"
	}
	v, err := s.editor.Save(ctx, policyedit.Save{Account: acct, Policy: p, Base: base, List: list && base == "",
		Meta: configstore.Meta{Author: u.Name, Action: action}})
	switch {
	case errors.Is(err, policyedit.ErrConflict):
		s.conflict(w, r, u, acct, base, p, j)
		return
	case errors.Is(err, policyedit.ErrInvalid):
		s.renderEditor(w, r, u, http.StatusUnprocessableEntity, a, doc, policyedit.DraftOf(p), base, list, true)
		return
	case err != nil && v.ID == "":
		s.fail(w, r, "saving the policy", err)
		return
	}
	c := changelog.Change{Action: "policy." + action, Target: acct, After: v.ID,
		Summary: action + "d " + policy.FileName(acct), Detail: policyedit.Summary(policyedit.Diff(doc.Policy, p))}
	if doc.Exists {
		c.Before = doc.Version.ID
	}
	msg := action + "d"
	if err != nil { // saved, but listing failed
		s.cfg.Logger.Error("console: listing after a save", "account", acct, "err", err)
		msg += "&msg=listfailed"
	} else if list && base == "" {
		c.Summary += " and listed the account"
	}
	s.policyChanged(w, r, u, acct, c, msg)
}

// conflict explains a refused save: what the other editor changed since
// this edit's base, and what saving this edit now would change.
func (s *Server) conflict(w http.ResponseWriter, r *http.Request, u *auth.User, acct, base string, mine *policy.Policy, j string) {
	ctx := r.Context()
	cur, err := s.editor.Load(ctx, acct)
	if err != nil {
		s.fail(w, r, "reading the policy", err)
		return
	}
	s.cfg.Logger.Info("console: save refused: the policy changed meanwhile", "user", u.Name, "account", acct, "base", base, "current", cur.Version.ETag)
	d := conflictData{Account: acct, Current: cur, JSON: j, Yours: policyedit.Diff(cur.Policy, mine)}
	if base != "" {
		if vs, err := s.editor.History(ctx, acct, historyLimit); err == nil {
			for _, v := range vs {
				if v.ETag == base && !v.Deleted {
					if f, err := s.editor.Version(ctx, acct, v.ID); err == nil {
						if old, err := policy.Parse("base", f.Data); err == nil {
							d.Theirs = policyedit.Diff(old, cur.Policy)
						}
					}
					break
				}
			}
		}
	}
	s.render(w, r, http.StatusConflict, "conflict", page{Title: "Not saved: changed meanwhile", Nav: "policies", User: u, Data: d})
}
