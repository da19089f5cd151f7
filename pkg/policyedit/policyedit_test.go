package policyedit_test

import (
	"context"
	"errors"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
	"github.com/millfleet/mill/pkg/stores"
)

const registry = `{"accounts": [
  {"id": "acme", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": "/tmp/a1"},
    {"id": "2", "kind": "fs", "root": "/tmp/a2"},
    {"id": "3", "kind": "fs", "root": "/tmp/a3"}]},
  {"id": "globex", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": "/tmp/g1"},
    {"id": "2", "kind": "fs", "root": "/tmp/g2"}]}]}`

func sp(src, dst string) policy.StorePolicy {
	return policy.StorePolicy{SrcStoreID: src, DestStoreID: dst}
}

// setup returns an editor over a directory holding the registry, and the
// directory.
func setup(t *testing.T) (*policyedit.Editor, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stores.FileName), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := fsconfigstore.New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return policyedit.New(files), dir
}

func TestCheckPutsEachProblemNextToItsField(t *testing.T) {
	reg, err := stores.Parse("accounts.json", []byte(registry))
	if err != nil {
		t.Fatal(err)
	}
	d := policyedit.Draft{
		Spaces: []policyedit.SpaceRow{
			{ID: "photos", Policies: []policy.StorePolicy{sp("1", "2"), sp("1", "3")}}, // fine
			{ID: "docs", Policies: []policy.StorePolicy{sp("1", "9")}},                 // unknown store
			{ID: "self", Policies: []policy.StorePolicy{sp("2", "2")}},                 // self-copy
			{ID: "x-work", Policies: []policy.StorePolicy{sp("1", "2")}},               // system space
			{ID: "photos", Policies: []policy.StorePolicy{sp("1", "2")}},               // twice
			{ID: "", Policies: []policy.StorePolicy{sp("1", "2")}},                     // empty id
			{ID: "scratch", Policies: []policy.StorePolicy{sp("1", "2")}},              // also ignored
		},
		Default: []policy.StorePolicy{sp("1", "7")},
		Ignore:  []string{"scratch", "tmp", "tmp"},
	}
	pr := policyedit.Check(d, reg.Known("acme"))
	want := []string{"", `store "9" is not a registered store`, "onto itself", `spaces starting with "x-"`, "appears twice", "empty space id", ""}
	for i, w := range want {
		got := strings.Join(pr.Spaces[i], " | ")
		if (w == "") != (got == "") || !strings.Contains(got, w) {
			t.Errorf("row %d (%s): problems %q, want %q", i, d.Spaces[i].ID, got, w)
		}
	}
	if got := strings.Join(pr.Default, " | "); !strings.Contains(got, `store "7" is not a registered store`) {
		t.Errorf("default problems %q", got)
	}
	ig := strings.Join(pr.Ignore, " | ")
	if !strings.Contains(ig, `"tmp" is ignored twice`) || !strings.Contains(ig, `"scratch" is both listed`) {
		t.Errorf("ignore problems %q", ig)
	}
	if len(pr.Policy) != 0 {
		t.Errorf("unattributed problems %q", pr.Policy)
	}
	if pr.OK() {
		t.Error("OK() with problems")
	}
	ok := policyedit.Check(policyedit.Draft{Spaces: d.Spaces[:1], Default: []policy.StorePolicy{sp("1", "2")}, Ignore: []string{"tmp"}}, reg.Known("acme"))
	if !ok.OK() {
		t.Errorf("a valid draft has problems: %q", ok.All())
	}
}

func TestSaveCreateConflictRestoreDelete(t *testing.T) {
	ctx := context.Background()
	e, dir := setup(t)
	ana := configstore.Meta{Author: "ana@example.org", Action: "save"}
	p1 := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"photos": {sp("1", "2")}}}

	if _, err := e.Save(ctx, policyedit.Save{Account: "initech", Policy: p1}); !errors.Is(err, policyedit.ErrUnknownAccount) {
		t.Fatalf("save for an account not in the registry = %v", err)
	}
	bad := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"photos": {sp("1", "9")}}}
	if _, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: bad}); !errors.Is(err, policyedit.ErrInvalid) ||
		!slices.ContainsFunc(policyedit.Messages(err), func(m string) bool { return strings.Contains(m, `store "9"`) }) {
		t.Fatalf("invalid save = %v (messages %q)", err, policyedit.Messages(err))
	}
	if d, err := e.Load(ctx, "acme"); err != nil || d.Exists {
		t.Fatalf("an invalid save wrote something: %+v, %v", d, err)
	}

	v1, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: p1, List: true, Meta: ana})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: p1}); !errors.Is(err, policyedit.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	// What pkg/policy's repository (Workman, millctl) reads.
	repo := policy.NewDir(dir)
	if got, err := repo.Policy(ctx, "acme"); err != nil || !got.Equal(p1) {
		t.Fatalf("repository reads %+v, %v", got, err)
	}
	if l, err := repo.Accounts(ctx); err != nil || !slices.Equal(l, []string{"acme"}) {
		t.Fatalf("listed = %v, %v", l, err)
	}

	// Two editors start from v1; the first save wins, the second is refused.
	p2 := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"photos": {sp("1", "2"), sp("1", "3")}}}
	p3 := &policy.Policy{Default: []policy.StorePolicy{sp("1", "2")}}
	v2, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: p2, Base: v1.ETag, Meta: configstore.Meta{Author: "bo"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: p3, Base: v1.ETag, Meta: configstore.Meta{Author: "chen"}}); !errors.Is(err, policyedit.ErrConflict) {
		t.Fatalf("save on a stale version = %v, want ErrConflict", err)
	}
	d, err := e.Load(ctx, "acme")
	if err != nil || !d.Policy.Equal(p2) || d.Version.ETag != v2.ETag || d.Version.Meta.Author != "bo" {
		t.Fatalf("after the conflict: %+v, %v", d, err)
	}

	// Restore v1 (a new version with v1's content).
	v3, err := e.Restore(ctx, "acme", v1.ID, v2.ETag, configstore.Meta{Author: "ana@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := repo.Policy(ctx, "acme"); !got.Equal(p1) {
		t.Fatalf("restored %+v, want %+v", got, p1)
	}
	hist, err := e.History(ctx, "acme", 10)
	if err != nil || len(hist) != 3 || hist[0].ID != v3.ID || !strings.Contains(hist[0].Meta.Action, "restore of version "+v1.ID) || hist[2].Meta.Author != "ana@example.org" {
		t.Fatalf("history %+v, %v", hist, err)
	}
	if _, err := e.Restore(ctx, "acme", v2.ID, v2.ETag, configstore.Meta{}); !errors.Is(err, policyedit.ErrConflict) {
		t.Fatalf("restore on a stale version = %v", err)
	}

	// Delete: stale base refused (nothing changes), current base deletes and unlists.
	if err := e.Delete(ctx, "acme", v2.ETag, configstore.Meta{}); !errors.Is(err, policyedit.ErrConflict) {
		t.Fatalf("delete on a stale version = %v", err)
	}
	if l, _ := repo.Accounts(ctx); !slices.Equal(l, []string{"acme"}) {
		t.Fatalf("a refused delete unlisted the account: %v", l)
	}
	if err := e.Delete(ctx, "acme", v3.ETag, configstore.Meta{Author: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Policy(ctx, "acme"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("after delete the repository reads %v", err)
	}
	if l, _ := repo.Accounts(ctx); len(l) != 0 {
		t.Fatalf("after delete listed = %v", l)
	}
	// Restore after a delete: base "" re-creates it.
	if _, err := e.Restore(ctx, "acme", v2.ID, "", configstore.Meta{Author: "bo"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := repo.Policy(ctx, "acme"); !got.Equal(p2) {
		t.Fatalf("restored after delete: %+v", got)
	}
}

// racingStore changes duplication-accounts.json behind the editor's back
// before its first write of that file.
type racingStore struct {
	configstore.Store
	raced bool
}

func (r *racingStore) Put(ctx context.Context, name string, data []byte, c configstore.Cond, m configstore.Meta) (configstore.Version, error) {
	if name == policy.AccountsFile && !r.raced {
		r.raced = true
		if _, err := r.Store.Put(ctx, name, []byte(`["globex"]`), configstore.Cond{}, configstore.Meta{Author: "someone else"}); err != nil {
			return configstore.Version{}, err
		}
	}
	return r.Store.Put(ctx, name, data, c, m)
}

func TestSetListedKeepsAConcurrentChange(t *testing.T) {
	ctx := context.Background()
	e, dir := setup(t)
	p := &policy.Policy{Default: []policy.StorePolicy{sp("1", "2")}}
	if _, err := e.SetListed(ctx, "acme", true, configstore.Meta{}); !errors.Is(err, policyedit.ErrNoPolicy) {
		t.Fatalf("listing without a policy = %v, want ErrNoPolicy", err)
	}
	if _, err := e.Save(ctx, policyedit.Save{Account: "acme", Policy: p}); err != nil {
		t.Fatal(err)
	}
	racing := policyedit.New(&racingStore{Store: e.Files()})
	changed, err := racing.SetListed(ctx, "acme", true, configstore.Meta{Author: "ana"})
	if err != nil || !changed {
		t.Fatalf("SetListed = %v, %v", changed, err)
	}
	l, err := policy.NewDir(dir).Accounts(ctx)
	if err != nil || !slices.Equal(l, []string{"globex", "acme"}) {
		t.Fatalf("listed = %v, %v; want the other editor's globex kept and acme added", l, err)
	}
	if changed, err := e.SetListed(ctx, "acme", true, configstore.Meta{}); err != nil || changed {
		t.Errorf("listing a listed account: %v, %v", changed, err)
	}
	if changed, err := e.SetListed(ctx, "acme", false, configstore.Meta{}); err != nil || !changed {
		t.Errorf("unlisting: %v, %v", changed, err)
	}
}

func TestDiff(t *testing.T) {
	old := &policy.Policy{
		SpacePolicies: map[string][]policy.StorePolicy{"photos": {sp("1", "2")}, "docs": {sp("1", "2")}},
		Default:       []policy.StorePolicy{sp("1", "2")}, Ignore: []string{"tmp"},
	}
	new := &policy.Policy{
		SpacePolicies: map[string][]policy.StorePolicy{"photos": {sp("1", "2"), sp("1", "3")}, "video": {sp("1", "3")}},
		Ignore:        []string{"scratch"},
	}
	got := policyedit.Summary(policyedit.Diff(old, new))
	want := strings.Join([]string{
		`- space "docs" (was: 1→2)`,
		`~ space "photos": 1→2 → 1→2, 1→3`,
		`+ space "video": 1→3`,
		`- defaultPolicies (was: 1→2)`,
		`- spacesToIgnore (was: tmp)`,
		`+ spacesToIgnore: scratch`,
	}, "\n")
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if s := policyedit.Summary(policyedit.Diff(old, old)); s != "no change" {
		t.Errorf("no diff: %q", s)
	}
	if d := policyedit.Diff(nil, old); len(d) != 4 {
		t.Errorf("diff from nothing: %v", d)
	}
}
