package workman

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
