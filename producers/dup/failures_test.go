package dup_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

// TestBrokenStoreDoesNotStopTheSweep: of four accounts, alpha's
// destination store cannot be opened (its credentials profile is missing),
// gamma's source store cannot be listed (a space record is a symbolic
// link) and beta's space s2 cannot be listed (access denied); delta and
// every other space are swept, the failures are in the summary and the
// notification, and the next run retries them and sweeps them once fixed.
func TestBrokenStoreDoesNotStopTheSweep(t *testing.T) {
	ctx := context.Background()
	cfgDir, root := t.TempDir(), t.TempDir()
	var accounts []string
	var regs []string
	for _, a := range []string{"alpha", "beta", "gamma", "delta"} {
		accounts = append(accounts, fmt.Sprintf("%q", a))
		regs = append(regs, fmt.Sprintf(`{"id": %q, "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %q},
    {"id": "2", "kind": "fs", "root": %q}]}`, a, filepath.Join(root, a+"1"), filepath.Join(root, a+"2")))
		write(t, filepath.Join(cfgDir, policy.FileName(a)), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	}
	write(t, filepath.Join(cfgDir, stores.FileName), `{"accounts": [`+strings.Join(regs, ",")+`]}`)
	write(t, filepath.Join(cfgDir, policy.AccountsFile), "["+strings.Join(accounts, ",")+"]")
	reg, err := stores.LoadFile(filepath.Join(cfgDir, stores.FileName))
	if err != nil {
		t.Fatal(err)
	}
	profileMissing, denied := true, true
	opener := stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) {
		if profileMissing && s.Root == filepath.Join(root, "alpha2") {
			return nil, errors.New(`failed to get shared config profile, "gone"`)
		}
		p, err := fsstore.New(s.Root)
		if s.Root == filepath.Join(root, "beta1") {
			return deniedSpace{p, "s2", &denied}, err
		}
		return p, err
	}})
	open := func(account, store string) storage.Provider {
		t.Helper()
		p, err := fsstore.New(filepath.Join(root, account+store))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, a := range []string{"alpha", "beta", "gamma", "delta"} {
		fill(t, open(a, "1"), "s1", "i1", "i2")
		fill(t, open(a, "1"), "s2", "d/j1")
	}
	// gamma's store 1 holds a space whose record is a symbolic link:
	// listing the store's spaces is refused (fsstore.ErrUnsafe).
	record := filepath.Join(root, "gamma1", "s2", ".mill-space.json")
	if err := os.Rename(record, record+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(record+".moved", record); err != nil {
		t.Fatal(err)
	}

	logger := slog.New(slog.DiscardHandler)
	prod, err := dup.New(dup.Config{Registry: reg, Policies: policy.NewDir(cfgDir), Opener: opener, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	q := memqueue.New("mill-dup-low", memqueue.Config{Clock: clk})
	var notes memnotify.Notifier
	loop, err := looping.New(looping.Config{
		Kind: dup.Kind, Producer: prod, Queue: q, State: looping.NewMemoryStore(), Lease: memlease.New(clk),
		Frequency: looping.Frequency{N: 1, Unit: looping.Days}, Notifier: &notes,
		Clock: clk, Logger: logger, Progress: looping.ProgressOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	swept := func() map[string]int {
		out := map[string]int{}
		for _, m := range q.Messages() {
			tk, err := task.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			if id := tk.Get(task.KeyContentID); id != "" {
				out[tk.Get(task.KeyAccount)+"/"+tk.Get(task.KeySpaceID)+"/"+id]++
			}
		}
		if err := q.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		return out
	}

	sum, err := loop.Run(ctx)
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run with broken parts: %v %v; want it done", sum, err)
	}
	got := swept()
	for _, want := range []string{"delta/s1/i1", "delta/s1/i2", "delta/s2/d/j1", "beta/s1/i1", "beta/s1/i2"} {
		if got[want] == 0 {
			t.Errorf("%s not swept (swept %v)", want, got)
		}
	}
	var failedIDs []string
	for _, f := range sum.Failed {
		failedIDs = append(failedIDs, f.ID)
	}
	slices.Sort(failedIDs)
	if !slices.Equal(failedIDs, []string{"alpha/(store 2)", "beta/s2/1→2", "gamma/(store 1)"}) || !sum.HasFailures() {
		t.Fatalf("failed %+v, want alpha's store 2 and beta's s2", sum.Failed)
	}
	evs := notes.Events()
	if len(evs) != 1 || !strings.Contains(evs[0].Subject, "3 FAILED") || !strings.Contains(evs[0].Body, `profile, "gone"`) {
		t.Fatalf("notifications %+v", evs)
	}

	// Fixed: the next run sweeps them.
	profileMissing, denied = false, false
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(record+".moved", record); err != nil {
		t.Fatal(err)
	}
	clk.Advance(25 * time.Hour)
	sum, err = loop.Run(ctx)
	if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 0 {
		t.Fatalf("next run: %v %v (failed %+v)", sum, err, sum.Failed)
	}
	got = swept()
	for _, want := range []string{"alpha/s1/i1", "alpha/s2/d/j1", "beta/s2/d/j1", "gamma/s1/i1", "gamma/s2/d/j1"} {
		if got[want] == 0 {
			t.Errorf("next run: %s not swept (swept %v)", want, got)
		}
	}
}

// TestNothingListableFailsTheStart: when no store of any account can be
// opened, the run does not start (the next invocation tries again) rather
// than completing a run that swept nothing.
func TestNothingListableFailsTheStart(t *testing.T) {
	cfgDir := t.TempDir()
	write(t, filepath.Join(cfgDir, stores.FileName), `{"accounts": [{"id": "solo", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": "/nonexistent/a"}, {"id": "2", "kind": "fs", "root": "/nonexistent/b"}]}]}`)
	write(t, filepath.Join(cfgDir, policy.AccountsFile), `["solo"]`)
	write(t, filepath.Join(cfgDir, policy.FileName("solo")), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	reg, err := stores.LoadFile(filepath.Join(cfgDir, stores.FileName))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{FS: func(context.Context, stores.Store) (storage.Provider, error) {
		return nil, errors.New("network unreachable")
	}})
	prod, err := dup.New(dup.Config{Registry: reg, Policies: policy.NewDir(cfgDir), Opener: opener, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := prod.Morsels(context.Background(), looping.RunInfo{Kind: dup.Kind, ID: "20260501T000000Z"})
	if err == nil || !strings.Contains(err.Error(), "network unreachable") {
		t.Fatalf("Morsels: %v %v, want the run's start to fail", ms, err)
	}
}

// deniedSpace is a store whose listing of one space fails while *on (the
// space's permissions were changed under the run).
type deniedSpace struct {
	storage.Provider
	space string
	on    *bool
}

func (d deniedSpace) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	if *d.on && space == d.space {
		return nil, false, errors.New("AccessDenied: listing " + space)
	}
	return d.Provider.ListContent(ctx, space, after, limit)
}

// TestBadPolicyFailsOnlyItsAccount: an account whose policy file cannot be
// read (malformed) is a failed morsel; the other account is swept.
func TestBadPolicyFailsOnlyItsAccount(t *testing.T) {
	cfgDir, root := t.TempDir(), t.TempDir()
	write(t, filepath.Join(cfgDir, stores.FileName), fmt.Sprintf(`{"accounts": [
  {"id": "fine", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]},
  {"id": "garbled", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]}]}`,
		filepath.Join(root, "f1"), filepath.Join(root, "f2"), filepath.Join(root, "g1"), filepath.Join(root, "g2")))
	write(t, filepath.Join(cfgDir, policy.AccountsFile), `["garbled", "fine"]`)
	write(t, filepath.Join(cfgDir, policy.FileName("fine")), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	write(t, filepath.Join(cfgDir, policy.FileName("garbled")), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": `)
	reg, err := stores.LoadFile(filepath.Join(cfgDir, stores.FileName))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) {
		return fsstore.New(s.Root)
	}})
	for _, a := range []string{"f", "g"} {
		p, err := fsstore.New(filepath.Join(root, a+"1"))
		if err != nil {
			t.Fatal(err)
		}
		fill(t, p, "s", "i1")
	}
	prod, err := dup.New(dup.Config{Registry: reg, Policies: policy.NewDir(cfgDir), Opener: opener, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := prod.Morsels(context.Background(), looping.RunInfo{Kind: dup.Kind, ID: "20260501T000000Z"})
	if err != nil {
		t.Fatalf("Morsels: %v", err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
		if m.ID == "garbled/(policy)" && !strings.Contains(m.Failed, "garbled") {
			t.Errorf("failed morsel %+v does not say why", m)
		}
	}
	if !slices.Equal(ids, []string{"garbled/(policy)", "fine/s/1→2"}) {
		t.Errorf("morsels %v, want garbled's policy failed and fine's space", ids)
	}
}
