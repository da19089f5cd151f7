package workman

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// completions records each finished task's queue and fake time.
type completions struct {
	mu    sync.Mutex
	clk   clock.Clock
	calls []call
}

// sleeper returns a handler that takes d of fake time per task, then
// records it.
func (c *completions) sleeper(d func(queue string) time.Duration) processors.Handler {
	return processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		q := processors.QueueName(ctx)
		start := c.clk.Now()
		if err := clock.Sleep(ctx, c.clk, d(q)); err != nil {
			return err
		}
		c.mu.Lock()
		c.calls = append(c.calls, call{queue: q, id: tk.Get("id"), at: start})
		c.mu.Unlock()
		return nil
	})
}

func (c *completions) get() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.calls...)
}

func (c *completions) count(queue string) int {
	n := 0
	for _, x := range c.get() {
		if x.queue == queue {
			n++
		}
	}
	return n
}

func totalRequests(h *harness) (int64, []int64) {
	var total int64
	per := make([]int64, len(h.queues))
	for i, q := range h.queues {
		per[i] = q.RequestTotal()
		total += per[i]
	}
	return total, per
}

func tasks(prefix string, n int) []*task.Task {
	out := make([]*task.Task, n)
	for i := range out {
		out[i] = noopTask(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// TestIdleRequestBudget: six queues, all empty, from start and again after
// a busy spell: the SQS requests of the first ten idle minutes, counted by
// the queues, stay within 4 a minute.
func TestIdleRequestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return time.Second })})
		c.clk = h.clk
		h.start()
		h.advance(10 * time.Minute)
		total, per := totalRequests(h)
		t.Logf("idle from start: %d requests in 10 min (%.1f/min), by queue %v", total, float64(total)/10, per)
		if total > 40 {
			t.Errorf("idle from start: %d requests in the first 10 minutes, want at most 40 (4/min)", total)
		}

		// A busy spell on the fifth queue, then idle again.
		h.put(4, tasks("low", 200)...)
		if !h.advanceUntil(10*time.Minute, func() bool { return len(c.get()) == 200 }) {
			t.Fatalf("ran %d of 200", len(c.get()))
		}
		for _, q := range h.queues {
			q.ResetRequests()
		}
		h.advance(10 * time.Minute)
		total, per = totalRequests(h)
		t.Logf("idle after a busy spell: %d requests in 10 min (%.1f/min), by queue %v", total, float64(total)/10, per)
		if total > 40 {
			t.Errorf("idle after work: %d requests in the first 10 minutes, want at most 40 (4/min)", total)
		}
	})
}

// TestIdlePickupLatency: with every queue empty, a message on the top queue
// starts within one long-poll wait, and one on any other queue within one
// round of the idle rotation (2·(queues−1) long polls).
func TestIdlePickupLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return time.Second })})
		c.clk = h.clk
		h.start()
		for k, q := range []int{0, 1, 3, 5, 0, 2, 4} {
			// Idle again (a message makes every queue watched for a
			// while), at a different phase of the rotation each time.
			h.advance(3*time.Minute + time.Duration(k)*17*time.Second)
			n := len(c.get())
			put := h.clk.Now()
			h.put(q, noopTask(fmt.Sprint("q", q)))
			if !h.advanceUntil(10*time.Minute, func() bool { return len(c.get()) > n }) {
				t.Fatalf("the message on q%d did not run", q)
			}
			lat := c.get()[n].at.Sub(put)
			bound := DefaultIdlePollWait
			if q > 0 {
				bound = 2 * 5 * DefaultIdlePollWait
			}
			t.Logf("idle: q%d picked up after %v (bound %v)", q, lat, bound)
			if lat > bound {
				t.Errorf("idle: the message on q%d started after %v, want within %v", q, lat, bound)
			}
		}
	})
}

// TestBusyLowQueueDoesNotWaitForEmptyHigherOnes: work only on the fifth of
// six queues; it runs as fast as with that queue alone, and the empty
// higher queues cost one long poll each per 20 s.
func TestBusyLowQueueDoesNotWaitForEmptyHigherOnes(t *testing.T) {
	run := func(queues, busy int) (done int, receives []int64) {
		var out int
		synctest.Test(t, func(t *testing.T) {
			c := &completions{}
			h := newHarness(t, harnessOpts{queues: queues, handler: c.sleeper(func(string) time.Duration { return 2 * time.Second })})
			c.clk = h.clk
			h.put(busy, tasks("low", 1000)...)
			h.start()
			h.advance(5 * time.Minute)
			out = len(c.get())
			for _, q := range h.queues {
				receives = append(receives, q.Requests()[memqueue.OpReceive])
			}
		})
		return out, receives
	}
	one, r1 := run(1, 0)
	six, r6 := run(6, 4)
	t.Logf("5 min, 4 workers × 2 s tasks: one queue %d tasks (receives %v), six queues %d (receives %v)", one, r1, six, r6)
	if six < one*95/100 {
		t.Errorf("six queues ran %d tasks, one queue %d: want at least 0.95×", six, one)
	}
	for i := range 4 {
		// 5 min of 20 s long polls, plus the first one.
		if r6[i] > 16 {
			t.Errorf("empty queue q%d was asked %d times in 5 minutes, want one long poll per 20 s", i, r6[i])
		}
	}
	if r6[4] > r1[0]+1 {
		t.Errorf("busy queue: %d receives among six queues, %d alone", r6[4], r1[0])
	}
	if r6[5] > 2 {
		t.Errorf("the queue below the busy one was asked %d times while it was held back", r6[5])
	}
}

// TestHighPickupWhileLowBusy: every worker is busy with 10 s tasks from the
// fifth queue; a message on the second queue starts on the next free
// worker: within one low task's duration (+ 1 s).
func TestHighPickupWhileLowBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		const lowTask = 10 * time.Second
		var startsMu sync.Mutex
		var starts []call
		h := newHarness(t, harnessOpts{queues: 6, handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			startsMu.Lock()
			starts = append(starts, call{queue: processors.QueueName(ctx), id: tk.Get("id"), at: c.clk.Now()})
			startsMu.Unlock()
			d := lowTask
			if processors.QueueName(ctx) != "q4" {
				d = time.Second
			}
			return clock.Sleep(ctx, c.clk, d)
		})})
		c.clk = h.clk
		h.put(4, tasks("low", 400)...)
		h.start()
		for _, wait := range []time.Duration{time.Minute, 37 * time.Second, 2*time.Minute + 3*time.Second} {
			h.advance(wait)
			put := h.clk.Now()
			h.put(1, noopTask("urgent"))
			var got time.Time
			if !h.advanceUntil(time.Minute, func() bool {
				startsMu.Lock()
				defer startsMu.Unlock()
				for _, s := range starts {
					if s.id == "urgent" && !s.at.Before(put) {
						got = s.at
						return true
					}
				}
				return false
			}) {
				t.Fatal("the urgent task did not start")
			}
			lat := got.Sub(put)
			t.Logf("urgent task started %v after it was sent (one low task: %v)", lat, lowTask)
			if lat > lowTask+time.Second {
				t.Errorf("urgent task started %v after it was sent, want within %v", lat, lowTask+time.Second)
			}
		}
	})
}

// TestMinShare: the second and the sixth queue are both flooded. Without a
// share the sixth gets nothing until the second drains; with
// MinShare{q5: 0.2} it gets 20 % ± 5 % of the tasks completed meanwhile.
func TestMinShare(t *testing.T) {
	run := func(share float64) (high, low int) {
		synctest.Test(t, func(t *testing.T) {
			c := &completions{}
			h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return 2 * time.Second }),
				cfg: func(cfg *Config) {
					if share > 0 {
						cfg.MinShare = map[string]float64{"q5": share}
					}
				}})
			c.clk = h.clk
			h.put(1, tasks("high", 300)...)
			h.put(5, tasks("bit", 300)...)
			h.start()
			if !h.advanceUntil(time.Hour, func() bool { return c.count("q1") == 300 }) {
				t.Fatalf("q1 did not drain: %d of 300", c.count("q1"))
			}
			high = 300
			for _, x := range c.get() {
				if x.queue == "q5" {
					low++
				}
			}
		})
		return high, low
	}
	_, strict := run(0)
	t.Logf("strict: bit completed %d while dup-high completed 300", strict)
	if strict != 0 {
		t.Errorf("strict priority: the low queue completed %d tasks before the high one drained, want 0", strict)
	}
	_, low := run(0.2)
	frac := float64(low) / float64(low+300)
	t.Logf("min share 0.2: bit completed %d while dup-high completed 300: %.1f %%", low, 100*frac)
	if frac < 0.15 || frac > 0.25 {
		t.Errorf("min share 0.2: the low queue got %.1f %% of the completed tasks, want 20 %% ± 5 %%", 100*frac)
	}
}

// TestBlockedQueueAskedOnceUnblocked: the lowest queue is not asked while
// the one above it has a backlog, and is asked as soon as that backlog is
// gone — it does not wait for the idle rotation.
func TestBlockedQueueAskedOnceUnblocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return time.Second })})
		c.clk = h.clk
		h.put(4, tasks("low", 100)...)
		h.start()
		if !h.advanceUntil(10*time.Minute, func() bool { return c.count("q4") == 100 }) {
			t.Fatal("q4 did not drain")
		}
		drained := h.clk.Now()
		h.put(5, tasks("bit", 5)...)
		if !h.advanceUntil(10*time.Minute, func() bool { return c.count("q5") == 5 }) {
			t.Fatal("q5 did not run")
		}
		var first time.Time
		for _, x := range c.get() {
			if x.queue == "q5" {
				first = x.at
				break
			}
		}
		t.Logf("q5 started %v after q4 drained", first.Sub(drained))
		if first.Sub(drained) > 5*time.Second {
			t.Errorf("the queue below started %v after the backlog above it drained, want within seconds", first.Sub(drained))
		}
	})
}

// simPlanner drives a planner alone: receives answer at once from
// per-queue depths, and each start is recorded and finished later by the
// caller.
type simPlanner struct {
	p      *planner
	depth  []int
	queue  map[*job]int
	starts []int // queue of each start, in order
}

func newSimPlanner(workers int, shares []float64, depth ...int) *simPlanner {
	c := Config{Workers: workers}.WithDefaults()
	return &simPlanner{p: newPlanner(c, shares), depth: depth, queue: map[*job]int{}}
}

// step lets every queue ask, answers every grant from the depths (watch
// answers of an empty queue wait, like a long poll) and records the
// starts; it returns the jobs started and the most held at once.
func (s *simPlanner) step() (started []*job, maxHeld int) {
	for i := range s.p.qs {
		if s.p.qs[i].inflight == noRecv {
			s.p.ask(i)
		}
	}
	for round := 0; round < 10; round++ {
		grants, starts, _ := s.p.decide()
		for _, j := range starts {
			s.starts = append(s.starts, s.queue[j])
			started = append(started, j)
		}
		maxHeld = max(maxHeld, s.p.held)
		if len(grants) == 0 {
			break
		}
		for _, g := range grants {
			k := min(g.n, s.depth[g.queue])
			if k == 0 && g.kind == watchRecv {
				if g.settle {
					s.p.waited(g)
				}
				continue // the long poll waits
			}
			s.depth[g.queue] -= k
			jobs := make([]*job, k)
			for x := range jobs {
				jobs[x] = &job{}
				s.queue[jobs[x]] = g.queue
			}
			s.p.received(g, jobs)
			s.p.ask(g.queue)
		}
	}
	return started, maxHeld
}

// TestPlannerShareCadence: with a 0.2 share and both queues flooded, every
// fifth start goes to the share queue, exactly.
func TestPlannerShareCadence(t *testing.T) {
	s := newSimPlanner(4, []float64{0, 0.2}, 1000, 1000)
	var running []*job
	for len(s.starts) < 200 {
		started, _ := s.step()
		running = append(running, started...)
		if len(running) == 0 {
			t.Fatal("nothing runs")
		}
		running = running[1:] // one finishes
		s.p.finished(nil)
	}
	// Skip the start-up (the first receives decide the first starts).
	low := 0
	for _, q := range s.starts[20:200] {
		if q == 1 {
			low++
		}
	}
	if low != 36 {
		t.Fatalf("share queue got %d of 180 starts, want exactly 36 (1 in 5); starts %v", low, s.starts)
	}
}

// TestPlannerHoldsOneBatch: with six flooded queues and every worker busy,
// the planner never holds more than one batch plus one message per watched
// queue, and batch receives never overlap the budget.
func TestPlannerHoldsOneBatch(t *testing.T) {
	s := newSimPlanner(3, make([]float64, 6), 500, 500, 500, 500, 500, 500)
	worst := 0
	var running []*job
	for range 300 {
		started, held := s.step()
		worst = max(worst, held)
		running = append(running, started...)
		if len(running) > 0 {
			running = running[1:]
			s.p.finished(nil)
		}
		if s.p.running+s.p.held+s.p.reservedBatch > 3+10+6 {
			t.Fatalf("running %d + held %d + batch in flight %d over workers + batch + one per queue", s.p.running, s.p.held, s.p.reservedBatch)
		}
	}
	if worst > 10+6 {
		t.Fatalf("held %d at once", worst)
	}
}
