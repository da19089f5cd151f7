package workman

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/task"
)

// TestDelayedRetryStartsWhenDue: on an otherwise idle manager of six
// queues, a task that failed on a low queue runs again within 5 s of its
// retry delay's end, at every phase of the idle rotation (which alone
// would reach that queue only once per round of ten long polls).
func TestDelayedRetryStartsWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		failed := map[string]time.Time{} // task id → when its first attempt failed
		rec := &recorder{}
		rec.fn = func(ctx context.Context, tk *task.Task) error {
			if tk.Attempts == 0 {
				mu.Lock()
				failed[tk.Get("id")] = rec.clk.Now()
				mu.Unlock()
				return errors.New("flaky")
			}
			return nil
		}
		h := newHarness(t, harnessOpts{queues: 6, handler: rec})
		rec.clk = h.clk
		h.start()
		for k, q := range []int{5, 3, 5, 1, 4, 5} {
			h.advance(3*time.Minute + time.Duration(k)*7*time.Second)
			id := fmt.Sprint("k", k)
			n := len(rec.get())
			h.put(q, noopTask(id))
			if !h.advanceUntil(10*time.Minute, func() bool { return len(rec.get()) >= n+2 }) {
				t.Fatalf("task %s on q%d: calls %+v", id, q, rec.get()[n:])
			}
			retry := rec.get()[n+1]
			mu.Lock()
			due := failed[id].Add(DefaultRetryBase)
			mu.Unlock()
			late := retry.at.Sub(due)
			t.Logf("q%d: retry started %v after its delay ended", q, late)
			if retry.id != id || retry.attempts != 1 || late < 0 || late > 5*time.Second {
				t.Errorf("q%d: retry %+v started %v after its delay's end, want within 5s", q, retry, late)
			}
		}
	})
}

// TestBurstOfRetriesStartsWhenDue: a burst of tasks on the lowest of six
// queues, each failing its first attempt over two seconds, is retried in
// full within 5 s of the last retry's delay, with receives that take a
// round trip: the wake of the first due retry does not stand for the
// later ones.
func TestBurstOfRetriesStartsWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		rec.fn = func(ctx context.Context, tk *task.Task) error {
			if tk.Attempts == 0 {
				// The failures, and so the retries' due times, spread
				// over two seconds.
				_ = clock.Sleep(ctx, rec.clk, 250*time.Millisecond)
				return errors.New("flaky")
			}
			return nil
		}
		h := newHarness(t, harnessOpts{queues: 6, handler: rec, cfg: func(c *Config) { c.Workers = 8 },
			latency: func(int) time.Duration { return 3 * time.Millisecond }})
		rec.clk = h.clk
		h.put(5, tasks("b", 60)...)
		h.start()
		retried := func() (n int, last time.Time) {
			for _, c := range rec.get() {
				if c.attempts == 1 {
					n++
					last = c.at
				}
			}
			return n, last
		}
		if !h.advanceUntil(10*time.Minute, func() bool { n, _ := retried(); return n >= 60 }) {
			n, _ := retried()
			t.Fatalf("%d of 60 retries ran", n)
		}
		var firstFail time.Time
		for _, c := range rec.get() {
			if c.attempts == 0 && (firstFail.IsZero() || c.at.After(firstFail)) {
				firstFail = c.at
			}
		}
		_, last := retried()
		if late := last.Sub(firstFail.Add(DefaultRetryBase)); late > 5*time.Second {
			t.Errorf("the last retry started %v after the last delay ended, want within 5s", late)
		}
	})
}
