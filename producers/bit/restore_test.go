package bit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// restoring is the archive listing with restores: each archived item has
// a restore state, which RequestRestore moves from none to ongoing (as S3
// does; done() completes them), and Head reports. With listed, the
// listing reports the states too (S3's RestoreStatus attribute); without,
// it reports none (the emulator).
type restoring struct {
	archive
	mu       sync.Mutex
	listed   bool
	state    map[string]storage.RestoreState
	fail     map[string]error
	requests []string // "id days tier" of every RequestRestore
	heads    int
}

func newRestoring(l listing) *restoring {
	return &restoring{archive: archive{listing: l}, state: map[string]storage.RestoreState{}, fail: map[string]error{}}
}

func archivedID(id string) bool {
	var i int
	fmt.Sscanf(id, "item-%d", &i)
	return bit.ArchivedClass(classOf(i))
}

func (r *restoring) ListEntries(ctx context.Context, space, after string, limit int) ([]storage.Entry, bool, error) {
	es, more, err := r.archive.ListEntries(ctx, space, after, limit)
	if r.listed {
		r.mu.Lock()
		for i := range es {
			es[i].Restore = r.state[es[i].ID]
		}
		r.mu.Unlock()
	}
	return es, more, err
}

func (r *restoring) RequestRestore(ctx context.Context, space, id string, days int, tier storage.RestoreTier) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, fmt.Sprintf("%s %d %s", id, days, tier))
	if err := r.fail[id]; err != nil {
		return false, err
	}
	if !archivedID(id) {
		return false, errors.New("not archived")
	}
	if r.state[id] != storage.RestoreNone {
		return false, nil
	}
	r.state[id] = storage.RestoreOngoing
	return true, nil
}

func (r *restoring) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heads++
	return &storage.Info{ContentID: id, Archived: archivedID(id), Restore: r.state[id]}, nil
}

// done completes every restore in progress.
func (r *restoring) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.state {
		if s == storage.RestoreOngoing {
			r.state[id] = storage.RestoreRestored
		}
	}
}

type restoreOpener struct {
	opener
	r *restoring
}

func (o restoreOpener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	if account+"/"+storeID == "acme/1" {
		return o.r, nil
	}
	return o.opener.Open(ctx, account, storeID)
}

// restoreEnv is newEnv with acme/1 an s3 store of 2500 items (834 of them
// archived) whose archived method is method, and the restore route set.
func restoreEnv(t *testing.T, method stores.ArchivedMethod, listed bool) (*env, *restoring, *looping.Loop) {
	e := newEnv()
	e.reg.Accounts[0].Stores[0].Kind = storage.KindS3
	e.reg.Accounts[0].Stores[0].Fixity = stores.Fixity{ArchivedMethod: method}
	e.open = opener{"acme/1": {spaces: map[string]int{"photos": 2500}}, "acme/2": {spaces: map[string]int{}}}
	r := newRestoring(*e.open["acme/1"])
	r.listed = listed
	p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: restoreOpener{e.open, r}, Logger: slogtest.New(t, slog.LevelInfo)}, BitLog: e.log,
		Restore: &bit.Restore{Days: 3, Tier: storage.RestoreStandard}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, MaxQueueSize: 1 << 20, Frequency: looping.Frequency{N: 1, Unit: looping.Days},
		Clock: e.clk, Logger: slogtest.New(t, slog.LevelWarn), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	return e, r, l
}

// bitIDs returns the content IDs of the queued BIT tasks of acme/1.
func bitIDs(t *testing.T, e *env) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, tk := range decodeAll(t, e.bits) {
		b, err := task.BitFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		if b.Account == "acme" && b.StoreID == "1" {
			out[b.ContentID] = true
		}
	}
	return out
}

// TestRestoreRoute: in a store whose archived method is restore, run 1
// asks for a restore of every archived item (the configured days and
// tier), queues no BIT for them and leaves them out of the run's record;
// once the restores are done, run 2 (a listing that does not report
// restore states) queues a BIT for every item and asks for no new
// restore.
func TestRestoreRoute(t *testing.T) {
	e, r, l := restoreEnv(t, stores.ArchivedRestore, false)
	ctx := t.Context()
	arch := archivedIDs(2500)
	sum, err := l.Run(ctx)
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run 1: %+v %v", sum, err)
	}
	bits := bitIDs(t, e)
	if len(bits) != 2500-len(arch) {
		t.Fatalf("run 1: %d BITs, want %d (the hot items)", len(bits), 2500-len(arch))
	}
	for _, id := range arch {
		if bits[id] {
			t.Fatalf("run 1: BIT of archived %s, which cannot be read", id)
		}
	}
	if len(r.requests) != len(arch) {
		t.Fatalf("run 1: %d restore requests, want %d", len(r.requests), len(arch))
	}
	for i, req := range r.requests {
		if req != arch[i]+" 3 Standard" {
			t.Fatalf("restore request %d: %q, want %q", i, req, arch[i]+" 3 Standard")
		}
	}
	rs, err := e.log.RunSpace(ctx, sum.RunID, "acme", "1", "photos")
	if err != nil || rs.Expected != int64(2500-len(arch)) {
		t.Fatalf("run 1 record %+v %v, want %d listed (the archived items left out)", rs, err, 2500-len(arch))
	}

	r.done()
	e.clk.Advance(25 * time.Hour)
	sum2, err := l.Run(ctx)
	if err != nil || sum2.Stopped != looping.StopDone || sum2.RunID == sum.RunID {
		t.Fatalf("run 2: %+v %v", sum2, err)
	}
	if bits := bitIDs(t, e); len(bits) != 2500 {
		t.Fatalf("run 2: %d BITs, want 2500 (every item, the restored ones read)", len(bits))
	}
	for id, s := range r.state {
		if s != storage.RestoreRestored {
			t.Fatalf("%s: restore state %q after run 2", id, s)
		}
	}
	if rs, err := e.log.RunSpace(ctx, sum2.RunID, "acme", "1", "photos"); err != nil || rs.Expected != 2500 {
		t.Fatalf("run 2 record %+v %v, want 2500", rs, err)
	}
}

// TestRestoreListedStates: when the listing reports restore states, a
// restored item gets its BIT and an item whose restore is in progress is
// held, both without a restore request or a Head.
func TestRestoreListedStates(t *testing.T) {
	e, r, l := restoreEnv(t, stores.ArchivedRestore, true)
	arch := archivedIDs(2500)
	for i, id := range arch {
		if i%2 == 0 {
			r.state[id] = storage.RestoreRestored
		} else {
			r.state[id] = storage.RestoreOngoing
		}
	}
	if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run: %+v %v", sum, err)
	}
	bits := bitIDs(t, e)
	for i, id := range arch {
		if bits[id] != (i%2 == 0) {
			t.Fatalf("%s (restore %s): BIT %v", id, r.state[id], bits[id])
		}
	}
	if want := 2500 - len(arch) + (len(arch)+1)/2; len(bits) != want {
		t.Fatalf("%d BITs, want %d", len(bits), want)
	}
	if len(r.requests) != 0 || r.heads != 0 {
		t.Fatalf("%d restore requests and %d Heads, want none (the listing told)", len(r.requests), r.heads)
	}
}

// TestRestoreFailure: a restore request that fails holds its item (no BIT,
// not counted: the copy stays due) and the run goes on.
func TestRestoreFailure(t *testing.T) {
	e, r, l := restoreEnv(t, stores.ArchivedRestore, false)
	arch := archivedIDs(2500)
	r.fail[arch[0]] = errors.New("SlowDown")
	sum, err := l.Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run: %+v %v", sum, err)
	}
	if bits := bitIDs(t, e); bits[arch[0]] || len(bits) != 2500-len(arch) {
		t.Fatalf("%d BITs (failed item %v), want the hot items only", len(bits), bits[arch[0]])
	}
	if rs, _ := e.log.RunSpace(t.Context(), sum.RunID, "acme", "1", "photos"); rs.Expected != int64(2500-len(arch)) {
		t.Fatalf("record %+v", rs)
	}
	if r.state[arch[1]] != storage.RestoreOngoing || r.state[arch[0]] != storage.RestoreNone {
		t.Fatalf("restore states: %q %q", r.state[arch[0]], r.state[arch[1]])
	}
}

// TestRestoreOtherMethods: stores whose archived method is not restore ask
// for no restore: their archived items get BITs as before.
func TestRestoreOtherMethods(t *testing.T) {
	for _, m := range []stores.ArchivedMethod{stores.ArchivedNone, stores.ArchivedComputeChecksum} {
		e, r, l := restoreEnv(t, m, false)
		if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
			t.Fatalf("%s: run: %+v %v", m, sum, err)
		}
		if bits := bitIDs(t, e); len(bits) != 2500 || len(r.requests) != 0 {
			t.Fatalf("%s: %d BITs, %d restore requests; want 2500 and none", m, len(bits), len(r.requests))
		}
	}
}

// TestRestoreConfig: the restore settings are validated.
func TestRestoreConfig(t *testing.T) {
	e := newEnv()
	for _, c := range []struct {
		r    bit.Restore
		want string
	}{
		{bit.Restore{Days: 0}, "Days"},
		{bit.Restore{Days: 1, Tier: "Glacial"}, "Bulk, Standard or Expedited"},
	} {
		_, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: e.log, Restore: &c.r})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Restore %+v: %v, want an error naming %q", c.r, err, c.want)
		}
	}
	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: e.log, Restore: &bit.Restore{Days: 1}}); err != nil {
		t.Errorf("Restore{Days: 1}: %v", err)
	}
}
