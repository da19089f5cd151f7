package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/millfleet/mill/internal/console/auth"
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

// defaultRule is the store policy a new row starts with: the primary store
// to the first other one.
func defaultRule(a *stores.Account) policy.StorePolicy {
	var sp policy.StorePolicy
	if p := a.Primary(); p != nil {
		sp.SrcStoreID = p.ID
	}
	for _, st := range a.Stores {
		if st.ID != sp.SrcStoreID {
			sp.DestStoreID = st.ID
			break
		}
	}
	return sp
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
	acct, ok := s.account(w, r)
	if !ok {
		return
	}
	f, ok := s.readForm(w, r, u, maxEditorForm)
	if !ok {
		return
	}
	// base is empty when the edit creates the policy.
	j, base, list, op, checked := f.opt("policy"), f.req("base"), f.flag("list", "on"), f.opt("op"), f.flag("checked", "1")
	if !s.checkForm(w, r, u, f) {
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
	acct, ok := s.account(w, r)
	if !ok {
		return
	}
	f, ok := s.readForm(w, r, u, maxEditorForm)
	if !ok {
		return
	}
	// base is empty when the save creates the policy.
	j, base, list := f.nonEmpty("policy"), f.req("base"), f.flag("list", "on")
	if !s.checkForm(w, r, u, f) {
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
	if err := s.record(ctx, u, c); err != nil {
		msg += "&msg=unrecorded"
	}
	http.Redirect(w, r, "/policies/"+url.PathEscape(acct)+"?msg="+msg, http.StatusSeeOther)
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

// parseDraft reads the editor's fields: sN (space id of row N), sN.M.src
// and sN.M.dst (its store policies), d.M.src and d.M.dst (the defaults),
// ignore (one space per line). Rows and policies keep their numeric order.
func parseDraft(form url.Values) (policyedit.Draft, error) {
	var d policyedit.Draft
	rows := map[int]*policyedit.SpaceRow{}
	rules := map[int]map[int]*policy.StorePolicy{} // row (-1: default) → index → rule
	rule := func(row, idx int) *policy.StorePolicy {
		if rules[row] == nil {
			rules[row] = map[int]*policy.StorePolicy{}
		}
		if rules[row][idx] == nil {
			rules[row][idx] = &policy.StorePolicy{}
		}
		return rules[row][idx]
	}
	for k, vs := range form {
		v := ""
		if len(vs) > 0 {
			v = strings.TrimSpace(vs[0])
		}
		switch {
		case strings.HasPrefix(k, "s"):
			parts := strings.Split(k[1:], ".")
			n, err := strconv.Atoi(parts[0])
			if err != nil || n < 0 || n >= maxEditorRows {
				continue // not an editor field
			}
			if rows[n] == nil {
				rows[n] = &policyedit.SpaceRow{}
			}
			switch {
			case len(parts) == 1:
				rows[n].ID = v
			case len(parts) == 3:
				m, err := strconv.Atoi(parts[1])
				if err != nil || m < 0 || m >= maxRowPolicies {
					return d, fmt.Errorf("bad field %q", k)
				}
				setRule(rule(n, m), parts[2], v)
			}
		case strings.HasPrefix(k, "d."):
			parts := strings.Split(k, ".")
			if len(parts) != 3 {
				continue
			}
			m, err := strconv.Atoi(parts[1])
			if err != nil || m < 0 || m >= maxRowPolicies {
				return d, fmt.Errorf("bad field %q", k)
			}
			setRule(rule(-1, m), parts[2], v)
		case k == "ignore":
			for _, l := range strings.Split(strings.Join(vs, "\n"), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					d.Ignore = append(d.Ignore, l)
				}
			}
		}
	}
	ordered := func(m map[int]*policy.StorePolicy) []policy.StorePolicy {
		var idx []int
		for i := range m {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		out := make([]policy.StorePolicy, 0, len(idx))
		for _, i := range idx {
			out = append(out, *m[i])
		}
		return out
	}
	var idx []int
	for n := range rows {
		idx = append(idx, n)
	}
	slices.Sort(idx)
	for _, n := range idx {
		row := *rows[n]
		row.Policies = ordered(rules[n])
		d.Spaces = append(d.Spaces, row)
	}
	d.Default = ordered(rules[-1])
	return d, nil
}

func setRule(sp *policy.StorePolicy, field, v string) {
	switch field {
	case "src":
		sp.SrcStoreID = v
	case "dst":
		sp.DestStoreID = v
	}
}

// freshRule is the store policy a new entry starts with: the first pair of
// the account's stores, primary first, that the list does not hold yet.
func freshRule(a *stores.Account, list []policy.StorePolicy) policy.StorePolicy {
	first := defaultRule(a)
	srcs := []string{first.SrcStoreID}
	for _, st := range a.Stores {
		if st.ID != first.SrcStoreID {
			srcs = append(srcs, st.ID)
		}
	}
	for _, src := range srcs {
		for _, dst := range a.Stores {
			sp := policy.StorePolicy{SrcStoreID: src, DestStoreID: dst.ID}
			if src != dst.ID && !slices.Contains(list, sp) {
				return sp
			}
		}
	}
	return first
}

// applyOp applies an editor action to the draft: add-space, remove-space:N,
// add-rule:N, remove-rule:N:M, add-default, remove-default:M; "" and check
// change nothing.
func applyOp(d *policyedit.Draft, op string, a *stores.Account) error {
	name, arg, _ := strings.Cut(op, ":")
	nums := []int{}
	if arg != "" {
		for _, p := range strings.Split(arg, ":") {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return fmt.Errorf("bad action %q", op)
			}
			nums = append(nums, n)
		}
	}
	inRange := func(i, n int) bool { return i >= 0 && i < n }
	switch {
	case name == "" || name == "check":
	case name == "add-space" && len(nums) == 0:
		if len(d.Spaces) >= maxEditorRows {
			return fmt.Errorf("at most %d spaces", maxEditorRows)
		}
		d.Spaces = append(d.Spaces, policyedit.SpaceRow{Policies: []policy.StorePolicy{freshRule(a, nil)}})
	case name == "remove-space" && len(nums) == 1 && inRange(nums[0], len(d.Spaces)):
		d.Spaces = slices.Delete(d.Spaces, nums[0], nums[0]+1)
	case name == "add-rule" && len(nums) == 1 && inRange(nums[0], len(d.Spaces)):
		if len(d.Spaces[nums[0]].Policies) >= maxRowPolicies {
			return fmt.Errorf("at most %d store policies per space", maxRowPolicies)
		}
		d.Spaces[nums[0]].Policies = append(d.Spaces[nums[0]].Policies, freshRule(a, d.Spaces[nums[0]].Policies))
	case name == "remove-rule" && len(nums) == 2 && inRange(nums[0], len(d.Spaces)) && inRange(nums[1], len(d.Spaces[nums[0]].Policies)):
		row := &d.Spaces[nums[0]]
		row.Policies = slices.Delete(row.Policies, nums[1], nums[1]+1)
	case name == "add-default" && len(nums) == 0:
		if len(d.Default) >= maxRowPolicies {
			return fmt.Errorf("at most %d default store policies", maxRowPolicies)
		}
		d.Default = append(d.Default, freshRule(a, d.Default))
	case name == "remove-default" && len(nums) == 1 && inRange(nums[0], len(d.Default)):
		d.Default = slices.Delete(d.Default, nums[0], nums[0]+1)
	default:
		return fmt.Errorf("unknown action %q", op)
	}
	return nil
}
