// Package leasetest is the conformance suite every lease.Lease
// implementation passes. An implementation's test calls Run with a Harness
// whose New returns a fresh, empty lease store driven by a fake clock.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
)

// Fixture is one fresh lease store and the fake clock it reads.
type Fixture struct {
	Lease lease.Lease
	Clock *clock.Fake
}

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns a fresh Fixture for one subtest; it registers its own
	// cleanup with t.
	New func(t *testing.T) Fixture
}

var seq struct {
	sync.Mutex
	n int
}

func uniqueName(t *testing.T) string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return fmt.Sprintf("lt-%d-%d", time.Now().UnixNano(), seq.n)
}

func holder(id string, started time.Time) lease.Holder {
	return lease.Holder{ID: id, Identity: process.Identity{Hostname: "host-" + id, PID: 4000 + len(id), Started: started.UTC().Truncate(time.Second)}}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("leasetest: Harness.New is nil")
	}
	newFixture := h.New
	const ttl = 10 * time.Second
	ctx := context.Background()

	setup := func(t *testing.T) (lease.Lease, *clock.Fake, string) {
		t.Helper()
		f := newFixture(t)
		return f.Lease, f.Clock, uniqueName(t)
	}

	t.Run("ExclusiveAcquire", func(t *testing.T) {
		l, clk, name := setup(t)
		a := holder("a", clk.Now().Add(-time.Hour))
		ok, cur, err := l.Acquire(ctx, name, a, ttl)
		if err != nil || !ok {
			t.Fatalf("first acquire: granted=%v err=%v", ok, err)
		}
		if cur.ID != "a" || !cur.Expires.Equal(clk.Now().Add(ttl)) || !cur.Acquired.Equal(clk.Now()) {
			t.Fatalf("granted record = %+v, want id a, acquired %v, expires %v", cur, clk.Now(), clk.Now().Add(ttl))
		}
		clk.Advance(3 * time.Second)
		ok, cur, err = l.Acquire(ctx, name, holder("b", clk.Now()), ttl)
		if err != nil || ok {
			t.Fatalf("second holder: granted=%v err=%v, want refused", ok, err)
		}
		if cur.ID != "a" || cur.Hostname != "host-a" || cur.PID != a.PID || !cur.Started.Equal(a.Started) {
			t.Fatalf("refusal names %+v, want holder a with hostname, pid and start %+v", cur, a)
		}
		if cur.String() == "" || cur.String() == "nobody" {
			t.Fatalf("holder description %q", cur.String())
		}
		// The holder itself may acquire again; that extends the lease.
		ok, cur, err = l.Acquire(ctx, name, a, ttl)
		if err != nil || !ok || !cur.Expires.Equal(clk.Now().Add(ttl)) {
			t.Fatalf("re-acquire by holder: granted=%v cur=%+v err=%v", ok, cur, err)
		}
	})

	t.Run("ExpiryLetsAnotherTakeOver", func(t *testing.T) {
		l, clk, name := setup(t)
		if ok, _, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl); err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		clk.Advance(ttl) // expires this second: still held
		if ok, _, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl); err != nil || ok {
			t.Fatalf("b at expiry second: granted=%v err=%v, want refused", ok, err)
		}
		clk.Advance(time.Second)
		ok, cur, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl)
		if err != nil || !ok || cur.ID != "b" {
			t.Fatalf("b after expiry: granted=%v cur=%+v err=%v", ok, cur, err)
		}
		if _, err := l.Renew(ctx, name, "a", ttl); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("renew by former holder: %v, want ErrNotHeld", err)
		}
		if err := l.Release(ctx, name, "a"); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("release by former holder: %v, want ErrNotHeld", err)
		}
	})

	t.Run("RenewExtends", func(t *testing.T) {
		l, clk, name := setup(t)
		if ok, _, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl); err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		clk.Advance(8 * time.Second)
		h, err := l.Renew(ctx, name, "a", ttl)
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		if h.ID != "a" || !h.Expires.Equal(clk.Now().Add(ttl)) {
			t.Fatalf("renewed record %+v, want id a expiring %v", h, clk.Now().Add(ttl))
		}
		clk.Advance(8 * time.Second) // past the first expiry, within the renewed one
		if ok, cur, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl); err != nil || ok || cur.ID != "a" {
			t.Fatalf("b after renewal: granted=%v cur=%+v err=%v, want refused naming a", ok, cur, err)
		}
	})

	t.Run("ReleaseFrees", func(t *testing.T) {
		l, clk, name := setup(t)
		if ok, _, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl); err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		if err := l.Release(ctx, name, "a"); err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := l.Release(ctx, name, "a"); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("second release: %v, want ErrNotHeld", err)
		}
		if ok, cur, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl); err != nil || !ok || cur.ID != "b" {
			t.Fatalf("b after release: granted=%v cur=%+v err=%v", ok, cur, err)
		}
	})

	t.Run("StrangerCannotRenewOrRelease", func(t *testing.T) {
		l, clk, name := setup(t)
		if _, err := l.Renew(ctx, name, "a", ttl); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("renew of a free lease: %v, want ErrNotHeld", err)
		}
		if err := l.Release(ctx, name, "a"); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("release of a free lease: %v, want ErrNotHeld", err)
		}
		if ok, _, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl); err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		if _, err := l.Renew(ctx, name, "b", ttl); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("stranger renew: %v, want ErrNotHeld", err)
		}
		if err := l.Release(ctx, name, "b"); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("stranger release: %v, want ErrNotHeld", err)
		}
		if ok, cur, err := l.Acquire(ctx, name, holder("c", clk.Now()), ttl); err != nil || ok || cur.ID != "a" {
			t.Fatalf("after stranger's attempts: granted=%v cur=%+v err=%v, want a still holding", ok, cur, err)
		}
	})

	t.Run("ConcurrentAcquirersExactlyOneWins", func(t *testing.T) {
		l, clk, name := setup(t)
		const n = 8
		type res struct {
			id  string
			ok  bool
			cur lease.Holder
			err error
		}
		out := make(chan res, n)
		start := make(chan struct{})
		for i := range n {
			id := fmt.Sprintf("h%d", i)
			go func() {
				<-start
				ok, cur, err := l.Acquire(ctx, name, holder(id, clk.Now()), ttl)
				out <- res{id, ok, cur, err}
			}()
		}
		close(start)
		var winners []string
		var results []res
		for range n {
			r := <-out
			if r.err != nil {
				t.Fatalf("acquire %s: %v", r.id, r.err)
			}
			if r.ok {
				winners = append(winners, r.id)
			}
			results = append(results, r)
		}
		if len(winners) != 1 {
			t.Fatalf("winners = %v, want exactly one", winners)
		}
		for _, r := range results {
			if !r.ok && r.cur.ID != winners[0] {
				t.Errorf("%s was told %q holds the lease, want %q", r.id, r.cur.ID, winners[0])
			}
		}
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		l, clk, name := setup(t)
		if _, _, err := l.Acquire(ctx, "", holder("a", clk.Now()), ttl); err == nil {
			t.Error("acquire with empty name: no error")
		}
		if _, _, err := l.Acquire(ctx, name, lease.Holder{}, ttl); err == nil {
			t.Error("acquire with empty holder ID: no error")
		}
		if _, _, err := l.Acquire(ctx, name, holder("a", clk.Now()), 0); err == nil {
			t.Error("acquire with zero ttl: no error")
		}
	})

	t.Run("KeepRenewsAndReportsLoss", func(t *testing.T) {
		l, clk, name := setup(t)
		ok, cur, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl)
		if err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		kctx, stop := lease.Keep(ctx, l, name, "a", ttl, cur.Expires, lease.KeepOptions{Clock: clk, Logger: discard()})
		defer stop()
		wait, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		// Three renewal ticks carry the lease well past its first expiry.
		for range 3 {
			if err := clk.BlockUntil(wait, 1); err != nil {
				t.Fatalf("keeper never armed its timer: %v", err)
			}
			clk.Advance(ttl / 3)
		}
		if err := clk.BlockUntil(wait, 1); err != nil { // third renewal done
			t.Fatalf("keeper stopped: %v", err)
		}
		if ok, c, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl); err != nil || ok || c.ID != "a" {
			t.Fatalf("b while kept: granted=%v cur=%+v err=%v, want refused", ok, c, err)
		}
		if kctx.Err() != nil {
			t.Fatalf("kept context done while the lease is held: %v", context.Cause(kctx))
		}
		// Someone takes the lease away; the next renewal notices.
		if err := l.Release(ctx, name, "a"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := l.Acquire(ctx, name, holder("b", clk.Now()), ttl); err != nil || !ok {
			t.Fatalf("b after release: %v %v", ok, err)
		}
		clk.Advance(ttl / 3)
		select {
		case <-kctx.Done():
		case <-wait.Done():
			t.Fatal("kept context not cancelled after the lease was lost")
		}
		if cause := context.Cause(kctx); !errors.Is(cause, lease.ErrLost) {
			t.Fatalf("cause = %v, want ErrLost", cause)
		}
		if err := stop(); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("stop() = %v, want ErrLost", err)
		}
	})

	t.Run("KeepStopIsQuiet", func(t *testing.T) {
		l, clk, name := setup(t)
		ok, cur, err := l.Acquire(ctx, name, holder("a", clk.Now()), ttl)
		if err != nil || !ok {
			t.Fatalf("acquire a: %v %v", ok, err)
		}
		kctx, stop := lease.Keep(ctx, l, name, "a", ttl, cur.Expires, lease.KeepOptions{Clock: clk, Logger: discard()})
		if err := stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if err := stop(); err != nil {
			t.Fatalf("second stop: %v", err)
		}
		if kctx.Err() == nil {
			t.Fatal("kept context still live after stop")
		}
		if errors.Is(context.Cause(kctx), lease.ErrLost) {
			t.Fatal("stop reported as a loss")
		}
	})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
