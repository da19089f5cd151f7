package dup_test

import (
	"context"
	"fmt"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	dupproc "github.com/millfleet/mill/processors/dup"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

type fixture struct {
	policies policy.Reader
	opener   *stores.Opener
	q        *memqueue.Queue
	loop     *looping.Loop
	stores   map[string]*fsstore.Store // "account/store"
	reg      *stores.Registry
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fill(t *testing.T, s storage.Provider, space string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		body := "content of " + space + "/" + id
		if _, err := s.Put(ctx, space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), Properties: map[string]string{"id": id}}); err != nil {
			t.Fatal(err)
		}
	}
}

// newFixture: acme (active) with fs stores 1 (source), 2 and 3; dormant
// (inactive) and ghost (not registered) are listed for duplication too.
func newFixture(t *testing.T, biteSize int) *fixture {
	t.Helper()
	return newFixtureWith(t, biteSize, `{
  "spaceDuplicationStorePolicies": {
    "spaceB": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}],
    "private": []
  },
  "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}],
  "spacesToIgnore": ["scratch"]
}`)
}

// newFixtureWith is newFixture with acme's policy file acmePolicy.
func newFixtureWith(t *testing.T, biteSize int, acmePolicy string) *fixture {
	t.Helper()
	cfgDir, root := t.TempDir(), t.TempDir()
	write(t, filepath.Join(cfgDir, stores.FileName), fmt.Sprintf(`{"accounts": [
  {"id": "acme", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %[1]q},
    {"id": "2", "kind": "fs", "root": %[2]q},
    {"id": "3", "kind": "fs", "root": %[3]q}]},
  {"id": "dormant", "status": "inactive", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %[4]q},
    {"id": "2", "kind": "fs", "root": %[5]q}]}
]}`, filepath.Join(root, "acme1"), filepath.Join(root, "acme2"), filepath.Join(root, "acme3"),
		filepath.Join(root, "dormant1"), filepath.Join(root, "dormant2")))
	write(t, filepath.Join(cfgDir, policy.AccountsFile), `["acme", "dormant", "ghost"]`)
	write(t, filepath.Join(cfgDir, policy.FileName("acme")), acmePolicy)
	write(t, filepath.Join(cfgDir, policy.FileName("dormant")), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	reg, err := stores.LoadFile(filepath.Join(cfgDir, stores.FileName))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{stores: map[string]*fsstore.Store{}, policies: policy.NewDir(cfgDir), reg: reg}
	f.opener = stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) {
		return fsstore.New(s.Root)
	}})
	for _, k := range []string{"acme/1", "acme/2", "acme/3", "dormant/1", "dormant/2"} {
		a, id, _ := strings.Cut(k, "/")
		p, err := f.opener.Open(context.Background(), a, id)
		if err != nil {
			t.Fatal(err)
		}
		f.stores[k] = p.(*fsstore.Store)
	}
	src := f.stores["acme/1"]
	fill(t, src, "a", "a1", "a2", "a3", "a4", "a5")
	fill(t, src, "spaceB", "b1", "b2", "b3")
	fill(t, src, "scratch", "s1")
	fill(t, src, "private", "p1")
	fill(t, src, "x-system", "x1")
	fill(t, f.stores["acme/2"], "a", "a0", "a3", "zz1")
	// Spaces only at a destination: "old" (its source space is gone and
	// the default policy still covers it) and spaces no policy of theirs
	// covers (ignored, system, and one at 3, which only spaceB goes to).
	fill(t, f.stores["acme/2"], "old", "o1", "o2")
	fill(t, f.stores["acme/2"], "scratch", "s9")
	fill(t, f.stores["acme/2"], "x-cache", "c1")
	fill(t, f.stores["acme/3"], "elsewhere", "e1")
	fill(t, f.stores["dormant/1"], "d", "d1")

	logger := slog.New(slog.DiscardHandler)
	prod, err := dup.New(dup.Config{Registry: reg, Policies: policy.NewDir(cfgDir), Opener: f.opener, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	f.q = memqueue.New("mill-dup-low", memqueue.Config{Clock: clk})
	f.loop, err = looping.New(looping.Config{
		Kind: dup.Kind, Producer: prod, Queue: f.q, State: looping.NewMemoryStore(), Lease: memlease.New(clk),
		Frequency: looping.Frequency{N: 7, Unit: looping.Days}, BiteSize: biteSize,
		Clock: clk, Logger: logger, Progress: looping.ProgressOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) tasks(t *testing.T) []task.Dup {
	t.Helper()
	var out []task.Dup
	for _, m := range f.q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		d, err := task.DupFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestRunQueuesDeletesThenInterleavedBites(t *testing.T) {
	f := newFixture(t, 2)
	sum, err := f.loop.Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("Run = %v, %v", sum, err)
	}
	var got []string
	for _, d := range f.tasks(t) {
		if d.Account != "acme" || d.StoreID != "1" {
			t.Errorf("task %+v", d)
		}
		got = append(got, d.DestStoreID+":"+d.SpaceID+"/"+d.ContentID)
	}
	want := []string{
		// morsel acme/a/1→2: the space, then the deletes (a0 and zz1 are
		// only at the destination), then its first bite.
		"2:a/", "2:a/a0", "2:a/zz1",
		"2:a/a1", "2:a/a2",
		// acme/old/1→2: the space is only at the destination; its items
		// are deleted, then the space-level task removes the space.
		"2:old/o1", "2:old/o2", "2:old/",
		// acme/private/1→2: listed with an empty list, it follows the
		// default policy (as in Java).
		"2:private/", "2:private/p1",
		// acme/spaceB/1→2 and 1→3 take their turns.
		"2:spaceB/", "2:spaceB/b1", "2:spaceB/b2",
		"3:spaceB/", "3:spaceB/b1", "3:spaceB/b2",
		// round two, three.
		"2:a/a3", "2:a/a4",
		"2:spaceB/b3",
		"3:spaceB/b3",
		"2:a/a5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("tasks:\n got %q\nwant %q", got, want)
	}
	if sum.MorselsTotal != 5 {
		t.Errorf("%d morsels, want 5 (ignored, x- spaces, spaces no policy of theirs covers and inactive or unregistered accounts have none)", sum.MorselsTotal)
	}
}

func TestProducerAndProcessorMakeDestinationsEqual(t *testing.T) {
	f := newFixture(t, 1000)
	ctx := context.Background()
	if _, err := f.loop.Run(ctx); err != nil {
		t.Fatal(err)
	}
	audit := memqueue.New("audit", memqueue.Config{})
	// The audit log shows Mill's duplication made space old at store 2
	// and put its items there: the processor may delete them.
	history := memauditlog.New()
	for _, id := range []string{"", "o1", "o2"} {
		action := task.ActionAddContent
		if id == "" {
			action = task.ActionCreateSpace
		}
		if _, err := history.Put(ctx, auditlog.Entry{Account: "acme", StoreID: "2", SpaceID: "old", ContentID: id,
			Action: action, UserID: dupproc.UserID, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	proc, err := dupproc.New(dupproc.Config{
		Opener: f.opener, Audit: dupproc.AuditTo(audit, task.FormatJSON, nil), History: history,
		Live:     dupproc.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil }),
		Policies: f.policies,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.tasks(t) {
		if _, err := proc.Process(ctx, d); err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
	}
	same := func(src, dst storage.Provider, space string) {
		t.Helper()
		a, _, err := src.ListContent(ctx, space, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := dst.ListContent(ctx, space, "", 100)
		if err != nil {
			t.Fatalf("destination %s: %v", space, err)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s: source %v, destination %v", space, a, b)
		}
		for _, id := range a {
			si, _ := src.Head(ctx, space, id)
			di, _ := dst.Head(ctx, space, id)
			if si.Checksum != di.Checksum || !storage.PropertiesEqual(si.Properties, di.Properties) {
				t.Errorf("%s/%s differs", space, id)
			}
		}
	}
	src := f.stores["acme/1"]
	same(src, f.stores["acme/2"], "a")
	same(src, f.stores["acme/2"], "spaceB")
	same(src, f.stores["acme/3"], "spaceB")
	spaces, _ := f.stores["acme/2"].ListSpaces(ctx)
	same(src, f.stores["acme/2"], "private")
	if spaces, _ := f.stores["acme/3"].ListSpaces(ctx); !slices.Equal(spaces, []string{"elsewhere", "spaceB"}) {
		t.Errorf("destination 3 spaces %v (elsewhere is not covered by 1→3)", spaces)
	}
	if !slices.Equal(spaces, []string{"a", "private", "scratch", "spaceB", "x-cache"}) {
		t.Errorf("destination 2 spaces %v (old, Mill's, is deleted; ignored and x- spaces are left alone; an empty list follows the default)", spaces)
	}
	if spaces, _ := f.stores["dormant/2"].ListSpaces(ctx); len(spaces) != 0 {
		t.Errorf("inactive account duplicated: %v", spaces)
	}
	if audit.Len() == 0 {
		t.Error("no AUDIT tasks for the destination writes")
	}
}

func TestConfigRequiresEverything(t *testing.T) {
	_, err := dup.New(dup.Config{})
	for _, w := range []string{"Registry", "Policies", "Opener"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not mention %s", err, w)
		}
	}
}

// A destination that is also the source of a store policy of the space
// (store 2 in the chain 1→2→3) is never deleted from by duplication: the
// producer queues no deletes for it (the processor would refuse them).
func TestNoDeletesQueuedAtASourceStore(t *testing.T) {
	f := newFixtureWith(t, 1000, `{"spaceDuplicationStorePolicies": {"a": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}]}}`)
	if _, err := f.loop.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range f.tasks(t) {
		if d.SpaceID == "a" && d.StoreID == "1" {
			got = append(got, d.DestStoreID+":"+d.ContentID)
		}
	}
	want := []string{"2:", "2:a1", "2:a2", "2:a3", "2:a4", "2:a5"} // not a0 or zz1, only at 2
	if !slices.Equal(got, want) {
		t.Errorf("1→2 tasks of space a: %q, want %q", got, want)
	}
}
