package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
)

// historyData is the history page.
type historyData struct {
	Account  string
	Versions []versionRow
	Current  string // ETag of the current version ("" when deleted)
	Files    string
	Note     string
}

type versionRow struct {
	configstore.Version
	Who string
}

func (s *Server) historyPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	acct, ok := s.account(w, r)
	if !ok {
		return
	}
	vs, err := s.editor.History(r.Context(), acct, historyLimit)
	if err != nil {
		s.fail(w, r, "reading the history", err)
		return
	}
	d := historyData{Account: acct, Files: s.cfg.Files.Where(policy.FileName(acct))}
	d.Note = s.versioningNote(r)
	for _, v := range vs {
		row := versionRow{Version: v, Who: v.Meta.Author}
		if v.Current && !v.Deleted {
			d.Current = v.ETag
		}
		d.Versions = append(d.Versions, row)
	}
	s.fillDeleters(r, acct, d.Versions)
	s.render(w, r, http.StatusOK, "history", page{Title: "History of " + acct, Nav: "policies", User: u, Data: d})
}

// versioningNote warns when the config bucket keeps no versions.
func (s *Server) versioningNote(r *http.Request) string {
	v, ok := s.cfg.Files.(*s3configstore.Store)
	if !ok {
		return ""
	}
	on, err := v.Versioning(r.Context())
	switch {
	case err != nil:
		return "Could not tell whether the config bucket keeps versions: " + err.Error()
	case !on:
		return "The config bucket does not keep versions (S3 versioning is off): only the current version is shown, and a save replaces the previous one for good. `millctl setup` turns versioning on."
	}
	return ""
}

// fillDeleters names who deleted, from the change log: an S3 delete marker
// carries no metadata. Only the newest page of the log is read.
func (s *Server) fillDeleters(r *http.Request, acct string, rows []versionRow) {
	need := false
	for _, v := range rows {
		need = need || (v.Deleted && v.Who == "")
	}
	if !need {
		return
	}
	changes, _, err := s.cfg.Changes.List(r.Context(), "", changelog.MaxPage)
	if err != nil {
		s.cfg.Logger.Warn("console: reading the change log", "err", err)
		return
	}
	for i := range rows {
		if !rows[i].Deleted || rows[i].Who != "" {
			continue
		}
		for _, c := range changes {
			if c.Action == "policy.delete" && c.Target == acct && !c.Time.After(rows[i].Time.Add(5*time.Minute)) && !c.Time.Before(rows[i].Time.Add(-5*time.Minute)) {
				rows[i].Who = c.User
				break
			}
		}
	}
}

// versionData is one version of a policy.
type versionData struct {
	Account   string
	Version   configstore.Version
	Raw       string
	Changes   []policyedit.Change // from this version to the current one
	Current   string              // ETag of the current version ("" when deleted)
	IsCurrent bool
	ParseErr  string
}

func (s *Server) versionPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	acct, ok := s.account(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	f, err := s.editor.Version(ctx, acct, r.PathValue("version"))
	if errors.Is(err, configstore.ErrNotFound) {
		s.errorPage(w, r, u, http.StatusNotFound, "No such version", "That version does not exist (or is a deletion).")
		return
	}
	if err != nil {
		s.fail(w, r, "reading the version", err)
		return
	}
	cur, err := s.editor.Load(ctx, acct)
	if err != nil {
		s.fail(w, r, "reading the policy", err)
		return
	}
	d := versionData{Account: acct, Version: f.Version, Raw: string(f.Data)}
	if cur.Exists {
		d.Current = cur.Version.ETag
		d.IsCurrent = cur.Version.ID == f.Version.ID
	}
	old, perr := policy.Parse("version", f.Data)
	if perr != nil {
		d.ParseErr = strings.Join(policyedit.Messages(perr), "; ")
	} else {
		d.Changes = policyedit.Diff(old, cur.Policy)
	}
	s.render(w, r, http.StatusOK, "version", page{Title: "Version of " + acct, Nav: "policies", User: u, Data: d})
}

func (s *Server) restorePolicy(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var id, base string
	acct, ok := s.accountForm(w, r, u, 8<<10, func(f *form) {
		// base is empty when the policy is deleted now.
		id, base = f.nonEmpty("version"), f.req("base")
	})
	if !ok {
		return
	}
	ctx := r.Context()
	before, _ := s.editor.Load(ctx, acct)
	v, err := s.editor.Restore(ctx, acct, id, base, configstore.Meta{Author: u.Name})
	switch {
	case errors.Is(err, policyedit.ErrConflict):
		s.errorPage(w, r, u, http.StatusConflict, "Changed meanwhile",
			"The policy changed after you opened this page, so nothing was restored. Open the history again to see the latest version.")
		return
	case errors.Is(err, policyedit.ErrInvalid):
		s.render(w, r, http.StatusUnprocessableEntity, "error", page{Title: "Cannot restore", User: u, Data: errorData{"Cannot restore",
			"That version does not pass today's checks: " + strings.Join(policyedit.Messages(err), "; ")}})
		return
	case errors.Is(err, configstore.ErrNotFound):
		s.errorPage(w, r, u, http.StatusNotFound, "No such version", "That version does not exist (or is a deletion).")
		return
	case err != nil:
		s.fail(w, r, "restoring the policy", err)
		return
	}
	c := changelog.Change{Action: "policy.restore", Target: acct, Summary: "restored version " + id, After: v.ID}
	if before != nil && before.Exists {
		c.Before = before.Version.ID
		if before.Policy != nil {
			if f, err := s.editor.Version(ctx, acct, id); err == nil {
				if p, err := policy.Parse("v", f.Data); err == nil {
					c.Detail = policyedit.Summary(policyedit.Diff(before.Policy, p))
				}
			}
		}
	}
	s.policyChanged(w, r, u, acct, c, "restored")
}
