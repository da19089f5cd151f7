package evidence

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/blob/dirblob"
)

// TestCommitterGroupsAndWaits: concurrent Records are grouped into
// batches of MaxBatch, the rest flushed MaxDelay after its first event
// (on the fake clock), and each Record returns once its event is in a
// signed checkpoint.
func TestCommitterGroupsAndWaits(t *testing.T) {
	skey, v := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		l, err := Open(ctx, dir, skey, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := NewCommitter(l, 4, time.Second)
		go c.Run(ctx)
		start := time.Now()
		var wg sync.WaitGroup
		returned := make([]time.Duration, 10)
		for i := range 10 {
			wg.Go(func() {
				if err := c.Record(ctx, fixityEvent(i)); err != nil {
					t.Error(err)
				}
				returned[i] = time.Since(start)
			})
		}
		wg.Wait()
		late := 0
		for _, d := range returned {
			if d >= time.Second {
				late++
			}
		}
		if late != 2 {
			t.Errorf("%d Records waited for the delay, want the 2 of the last, partial batch (%v)", late, returned)
		}
		if cp := l.Checkpoint(); cp.Size != 10 {
			t.Errorf("log size %d, want 10", cp.Size)
		}
		cancel()
		synctest.Wait()
		if err := c.Record(context.Background(), fixityEvent(11)); !errors.Is(err, ErrCommitterStopped) {
			t.Errorf("Record after Run returned: %v", err)
		}
	})
	r := mustVerify(t, dir, v)
	if r.Checkpoints != 3 {
		t.Fatalf("%d checkpoints, want 3 batches (4, 4, 2)", r.Checkpoints)
	}
}

// TestCommitterErrors: an invalid event is refused alone; a failed
// append fails every Record of its batch, and recording the events again
// commits each once; an ID held with other content is a conflict.
func TestCommitterErrors(t *testing.T) {
	skey, v := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	f := &faultyBlobs{Store: dir, failAt: 1 << 30}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l, err := Open(ctx, f, skey, Options{Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		c := NewCommitter(l, 3, time.Second)
		go c.Run(ctx)
		bad := fixityEvent(0)
		bad.Outcome = "fine"
		if err := c.Record(ctx, bad); err == nil {
			t.Fatal("an invalid event was recorded")
		}
		// The batch's tile puts land, its checkpoint does not.
		f.mu.Lock()
		f.puts, f.failAt = 0, 2
		f.mu.Unlock()
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if err := c.Record(ctx, fixityEvent(i)); !errors.Is(err, errInjected) {
					t.Errorf("Record %d in a failed batch: %v", i, err)
				}
			})
		}
		wg.Wait()
		f.mu.Lock()
		f.failAt = 1 << 30
		f.mu.Unlock()
		for i := range 3 {
			wg.Go(func() {
				if err := c.Record(ctx, fixityEvent(i)); err != nil {
					t.Errorf("Record %d again: %v", i, err)
				}
			})
		}
		wg.Wait()
		changed := fixityEvent(1)
		changed.Detail = "other"
		if err := c.Record(ctx, changed); !errors.Is(err, ErrConflict) {
			t.Errorf("Record of a changed event: %v, want ErrConflict", err)
		}
	})
	mustVerify(t, dir, v)
	if ids := leafIDs(t, dir, v); len(ids) != 3 {
		t.Fatalf("%d events in the log, want 3", len(ids))
	}
}
