package looping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

// fakeMorsel is the Data a fakeProducer keeps in each morsel.
type fakeMorsel struct {
	Account string `json:"account"`
}

// fakeProducer lists morsels of numbered items ("item-00001"…) and,
// when deletes is set, a delete step per morsel. It records every step it
// is asked for, e.g. "A:deletes", "A:bite@item-01000".
type fakeProducer struct {
	items    map[string]int // morsel ID → number of items
	dels     map[string]int // morsel ID → number of delete tasks
	accounts map[string]string
	order    []string
	steps    []string
	morsels  int // Morsels calls
	// failAt, when > 0, makes the failAt-th bite (1-based, over the
	// producer's life) emit half its tasks and then fail.
	failAt int
	bites  int
	// onBite runs at the start of every bite.
	onBite func(ctx context.Context, m looping.Morsel) error
}

func newFake(order []string, items, dels map[string]int) *fakeProducer {
	acc := map[string]string{}
	for i, id := range order {
		acc[id] = fmt.Sprintf("acct%d", i)
	}
	return &fakeProducer{items: items, dels: dels, accounts: acc, order: order}
}

func itemName(i int) string { return fmt.Sprintf("item-%05d", i) }

func (p *fakeProducer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	p.morsels++
	var out []looping.Morsel
	for _, id := range p.order {
		d, _ := json.Marshal(fakeMorsel{Account: p.accounts[id]})
		out = append(out, looping.Morsel{ID: id, Data: d, Marker: "ignored", Done: true})
	}
	return out, nil
}

func (p *fakeProducer) task(m looping.Morsel, content, op string) *task.Task {
	var d fakeMorsel
	_ = json.Unmarshal(m.Data, &d)
	return task.New(task.TypeDup, map[string]string{
		task.KeyAccount: d.Account, task.KeySpaceID: m.ID, task.KeyContentID: content, "op": op,
	})
}

func (p *fakeProducer) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	p.steps = append(p.steps, m.ID+":bite@"+m.Marker)
	p.bites++
	if p.onBite != nil {
		if err := p.onBite(ctx, m); err != nil {
			return looping.BiteResult{}, err
		}
	}
	start := 0
	if m.Marker != "" {
		fmt.Sscanf(m.Marker, "item-%d", &start)
	}
	end := min(start+max, p.items[m.ID])
	var ts []*task.Task
	for i := start + 1; i <= end; i++ {
		ts = append(ts, p.task(m, itemName(i), "copy"))
	}
	if p.failAt > 0 && p.bites == p.failAt {
		if err := emit(ctx, ts[:len(ts)/2]...); err != nil {
			return looping.BiteResult{}, err
		}
		return looping.BiteResult{}, errors.New("injected crash")
	}
	if err := emit(ctx, ts...); err != nil {
		return looping.BiteResult{}, err
	}
	return looping.BiteResult{Marker: itemName(end), Done: end == p.items[m.ID]}, nil
}

// fakeDeleter adds the delete step.
type fakeDeleter struct{ *fakeProducer }

// Its delete step is one bite, whatever max.
func (p fakeDeleter) Deletes(ctx context.Context, run looping.RunInfo, m looping.Morsel, _ int, emit looping.Emit) (looping.BiteResult, error) {
	p.steps = append(p.steps, m.ID+":deletes")
	var ts []*task.Task
	for i := 1; i <= p.dels[m.ID]; i++ {
		ts = append(ts, p.task(m, fmt.Sprintf("gone-%d", i), "delete"))
	}
	return looping.BiteResult{Marker: m.DeletesMarker, Done: true}, emit(ctx, ts...)
}

type env struct {
	clk   *clock.Fake
	q     *memqueue.Queue
	lease *memlease.Lease
	state *looping.MemoryStore
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := clock.NewFake(time.Time{})
	return &env{
		clk:   clk,
		q:     memqueue.New("dup-low", memqueue.Config{Clock: clk}),
		lease: memlease.New(clk),
		state: looping.NewMemoryStore(),
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slogtest.New(t, slog.LevelWarn)
}

func (e *env) config(t *testing.T, p looping.Producer) looping.Config {
	return looping.Config{
		Kind:     "dupproducer",
		Producer: p,
		Queue:    e.q,
		State:    e.state,
		Lease:    e.lease,
		Clock:    e.clk,
		Logger:   testLogger(t),
		Progress: looping.ProgressOff,
	}
}

func mustNew(t *testing.T, c looping.Config) *looping.Loop {
	t.Helper()
	l, err := looping.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// drain decodes and removes every message on q, in send order.
func drain(t *testing.T, q *memqueue.Queue) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if m.Group != queue.GroupFor(tk.Get(task.KeyAccount)) {
			t.Fatalf("task of account %q sent with group %q", tk.Get(task.KeyAccount), m.Group)
		}
		out = append(out, tk)
	}
	if err := q.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// describe condenses a task list into runs like "A:delete×3 A:copy×1000".
func describe(ts []*task.Task) []string {
	var out []string
	var last string
	n := 0
	for _, tk := range ts {
		k := tk.Get(task.KeySpaceID) + ":" + tk.Get("op")
		if k != last && n > 0 {
			out = append(out, fmt.Sprintf("%s×%d", last, n))
			n = 0
		}
		last = k
		n++
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("%s×%d", last, n))
	}
	return out
}

// TestInterleavedDuplicationSequence checks DuraCloud's interleaving order
// (docs/ARCHITECTURE.md, Looping producers): A's deletes, A's first 1000
// copies, B's deletes, B's first 1000 copies, then A, B, A, B… — with the
// queue-full stop falling between steps and each later invocation resuming
// exactly there.
func TestInterleavedDuplicationSequence(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A", "B"}, map[string]int{"A": 2500, "B": 1500}, map[string]int{"A": 3, "B": 2})
	cfg := e.config(t, fakeDeleter{p})
	cfg.MaxQueueSize = 1004

	type inv struct {
		stopped looping.StopReason
		depth   int64
		tasks   []string
		sends   int64
	}
	want := []inv{
		// A deletes (3), A copies (1000) → 1003 visible; B deletes (2)
		// → 1005 ≥ 1004: stop before B's first copies.
		{looping.StopQueueFull, 1005, []string{"A:delete×3", "A:copy×1000", "B:delete×2"}, 1 + 100 + 1},
		{looping.StopQueueFull, 2000, []string{"B:copy×1000", "A:copy×1000"}, 200},
		{looping.StopDone, 0, []string{"B:copy×500", "A:copy×500"}, 100},
	}
	for i, w := range want {
		e.q.ResetRequests()
		sum, err := mustNew(t, cfg).Run(context.Background())
		if err != nil {
			t.Fatalf("invocation %d: %v", i+1, err)
		}
		if sum.Stopped != w.stopped || sum.Depth != w.depth {
			t.Errorf("invocation %d stopped %q at depth %d, want %q at %d", i+1, sum.Stopped, sum.Depth, w.stopped, w.depth)
		}
		if got := describe(drain(t, e.q)); strings.Join(got, " ") != strings.Join(w.tasks, " ") {
			t.Errorf("invocation %d queued %v, want %v", i+1, got, w.tasks)
		}
		if got := e.q.Requests()[memqueue.OpSend]; got != w.sends {
			t.Errorf("invocation %d made %d send requests, want %d (batches of 10)", i+1, got, w.sends)
		}
		e.clk.Advance(10 * time.Minute)
	}
	wantSteps := []string{"A:deletes", "A:bite@", "B:deletes", "B:bite@", "A:bite@item-01000", "B:bite@item-01000", "A:bite@item-02000"}
	if strings.Join(p.steps, " ") != strings.Join(wantSteps, " ") {
		t.Errorf("steps\n got %v\nwant %v", p.steps, wantSteps)
	}
	if p.morsels != 1 {
		t.Errorf("Morsels called %d times, want once per run", p.morsels)
	}
	st, err := e.state.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.InRun() || st.MorselsDone() != 2 || st.Invocations != 3 || st.Bites != 7 {
		t.Errorf("final state: in run %v, done %d, invocations %d, bites %d", st.InRun(), st.MorselsDone(), st.Invocations, st.Bites)
	}
	if got := st.Queued["DUP"]; got["acct0"] != 2503 || got["acct1"] != 1502 {
		t.Errorf("run counts %v, want acct0 2503, acct1 1502", st.Queued)
	}
}

// TestBitStyleProducer: without a Deleter, morsels go straight to bites and
// a closing task can be emitted with the last bite.
func TestBitStyleProducer(t *testing.T) {
	e := newEnv(t)
	sizes := map[string]int{"s1": 2100, "s2": 900, "s3": 0}
	prod := looping.ProducerFuncs{
		MorselsFunc: func(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
			return []looping.Morsel{{ID: "s1"}, {ID: "s2"}, {ID: "s3"}}, nil
		},
		BiteFunc: func(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
			if m.DeletesDone != true {
				t.Errorf("morsel %s: DeletesDone unset without a Deleter", m.ID)
			}
			start := 0
			fmt.Sscanf(m.Marker, "item-%d", &start)
			end := min(start+max, sizes[m.ID])
			for i := start + 1; i <= end; i++ {
				if err := emit(ctx, task.New(task.TypeBit, map[string]string{task.KeyAccount: "acme", task.KeySpaceID: m.ID, task.KeyContentID: itemName(i), "runId": run.ID})); err != nil {
					return looping.BiteResult{}, err
				}
			}
			done := end == sizes[m.ID]
			if done {
				if err := emit(ctx, task.New(task.TypeBitReport, map[string]string{task.KeyAccount: "acme", task.KeySpaceID: m.ID, "runId": run.ID, "expected": fmt.Sprint(sizes[m.ID])})); err != nil {
					return looping.BiteResult{}, err
				}
			}
			return looping.BiteResult{Marker: itemName(end), Done: done}, nil
		},
	}.AsProducer()
	if _, ok := prod.(looping.Deleter); ok {
		t.Fatal("ProducerFuncs without DeletesFunc is a Deleter")
	}
	cfg := e.config(t, prod)
	cfg.Kind = "bitproducer"
	cfg.Queue = memqueue.New("bit", memqueue.Config{Clock: e.clk})
	q := cfg.Queue.(*memqueue.Queue)
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run: %v %v", sum, err)
	}
	ts := drain(t, q)
	got := map[string]int{}
	var order []string
	for _, tk := range ts {
		got[string(tk.Type)+"/"+tk.Get(task.KeySpaceID)]++
		if tk.Type == task.TypeBitReport {
			order = append(order, tk.Get(task.KeySpaceID))
			if tk.Get("runId") != sum.RunID {
				t.Errorf("report runId %q, want %q", tk.Get("runId"), sum.RunID)
			}
		}
	}
	if got["BIT/s1"] != 2100 || got["BIT/s2"] != 900 || got["BIT_REPORT/s1"] != 1 || got["BIT_REPORT/s2"] != 1 || got["BIT_REPORT/s3"] != 1 {
		t.Errorf("queued %v", got)
	}
	// s3 (empty) and s2 finish in the first round, s1 in the third.
	if strings.Join(order, ",") != "s2,s3,s1" {
		t.Errorf("reports in order %v, want s2,s3,s1", order)
	}
	if sum.Queued["BIT"]["acme"] != 3000 || sum.Queued["BIT_REPORT"]["acme"] != 3 {
		t.Errorf("summary counts %v", sum.Queued)
	}
}

// TestCrashLosesNothing injects a failure in the middle of a bite — in the
// producer, in the queue and in the state store — and checks that a fresh
// Loop resumes from the saved state and every item is queued at least once,
// with at most one bite queued twice.
func TestCrashLosesNothing(t *testing.T) {
	const biteSize = 100
	sizes := map[string]int{"A": 745, "B": 1210, "C": 333}
	order := []string{"A", "B", "C"}
	cases := []struct {
		name  string
		setup func(e *env, p *fakeProducer, cfg *looping.Config)
		// morselFault: the fault is the morsel's (its producer failed), so
		// the invocation retries the bite at the morsel's next turn and
		// completes the run without an error.
		morselFault bool
	}{
		{"producer fails mid-bite", func(e *env, p *fakeProducer, cfg *looping.Config) { p.failAt = 7 }, true},
		{"queue send fails", func(e *env, p *fakeProducer, cfg *looping.Config) {
			n := 0
			cfg.Queue = memqueue.New("dup-low", memqueue.Config{Clock: e.clk, Fault: func(op string, i int) error {
				if op == memqueue.OpSend {
					n++
					if n == 555 {
						return errors.New("injected send failure")
					}
				}
				return nil
			}})
		}, false},
		{"state save fails", func(e *env, p *fakeProducer, cfg *looping.Config) {
			calls := 0
			e.state.FailSave = func(int) error {
				calls++
				if calls == 9 {
					return errors.New("injected save failure")
				}
				return nil
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := newFake(order, sizes, map[string]int{"A": 5, "B": 0, "C": 2})
			cfg := e.config(t, fakeDeleter{p})
			cfg.BiteSize = biteSize
			tc.setup(e, p, &cfg)
			q := cfg.Queue
			sum, err := mustNew(t, cfg).Run(context.Background())
			if tc.morselFault {
				if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 0 || sum.HasFailures() {
					t.Fatalf("invocation: %v, %v; want the failed bite retried and the run done", sum, err)
				}
			} else {
				if err == nil || sum.Stopped != looping.StopError || sum.Err == nil {
					t.Fatalf("first invocation: %v, %v; want an error", sum, err)
				}
				t.Logf("first invocation: %v", err)

				// A fresh producer and Loop, faults gone, same state and queue.
				// (The injected faults fire once.)
				p2 := newFake(order, sizes, map[string]int{"A": 5, "B": 0, "C": 2})
				cfg.Producer = fakeDeleter{p2}
				sum, err = mustNew(t, cfg).Run(context.Background())
				if err != nil || sum.Stopped != looping.StopDone {
					t.Fatalf("second invocation: %v, %v", sum, err)
				}
				if p2.morsels != 0 {
					t.Errorf("resumed invocation listed morsels again")
				}
			}
			seen := map[string]int{}
			for _, m := range q.(*memqueue.Queue).Messages() {
				tk, err := task.Decode(m.Body)
				if err != nil {
					t.Fatal(err)
				}
				seen[tk.Get(task.KeySpaceID)+"/"+tk.Get(task.KeyContentID)]++
			}
			dups := 0
			for id, n := range sizes {
				for i := 1; i <= n; i++ {
					switch c := seen[id+"/"+itemName(i)]; {
					case c == 0:
						t.Errorf("%s/%s never queued", id, itemName(i))
					case c > 1:
						dups += c - 1
					}
				}
			}
			if dups > biteSize {
				t.Errorf("%d items queued twice; a crash should repeat at most one bite (%d)", dups, biteSize)
			}
			t.Logf("duplicates after the crash: %d", dups)
		})
	}
}

func TestNotDueAndFrequency(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 10}, nil)
	cfg := e.config(t, p)
	cfg.Frequency = looping.Frequency{N: 1, Unit: looping.Hours}
	start := e.clk.Now()
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone || !sum.NextRun.Equal(start.Add(time.Hour)) {
		t.Fatalf("first run: %v %v", sum, err)
	}
	e.clk.Advance(59 * time.Minute)
	sum, err = mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopNotDue || !sum.NextRun.Equal(start.Add(time.Hour)) {
		t.Fatalf("before due: %v %v", sum, err)
	}
	if !strings.Contains(sum.String(), "not due until") {
		t.Errorf("summary %q", sum)
	}
	if p.morsels != 1 || e.q.Len() != 10 {
		t.Fatalf("not-due invocation did work: morsels %d, queue %d", p.morsels, e.q.Len())
	}
	e.clk.Advance(time.Minute)
	sum, err = mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone || p.morsels != 2 || e.q.Len() != 20 {
		t.Fatalf("when due: %v %v (morsels %d, queue %d)", sum, err, p.morsels, e.q.Len())
	}

	// Frequency 0: one run, then never due.
	e2 := newEnv(t)
	p2 := newFake([]string{"A"}, map[string]int{"A": 10}, nil)
	cfg2 := e2.config(t, p2)
	if sum, err := mustNew(t, cfg2).Run(context.Background()); err != nil || sum.Stopped != looping.StopDone || !sum.NextRun.IsZero() {
		t.Fatalf("frequency 0, first run: %v %v", sum, err)
	}
	e2.clk.Advance(1000 * time.Hour)
	sum, err = mustNew(t, cfg2).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopNotDue || !sum.NextRun.IsZero() || p2.morsels != 1 {
		t.Fatalf("frequency 0, later: %v %v", sum, err)
	}
	if !strings.Contains(sum.String(), "looping disabled") {
		t.Errorf("summary %q", sum)
	}
}

func TestLeaseHeld(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 10}, nil)
	cfg := e.config(t, p)
	other := lease.Holder{ID: "other", Identity: process.Identity{Hostname: "box-7", PID: 99, Started: e.clk.Now()}}
	if ok, _, err := e.lease.Acquire(context.Background(), "dupproducer", other, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopLeaseHeld || sum.Holder.ID != "other" {
		t.Fatalf("run: %+v %v", sum, err)
	}
	if !strings.Contains(sum.String(), "box-7 pid 99") {
		t.Errorf("summary %q does not name the holder", sum)
	}
	if p.morsels != 0 || e.state.Saves() != 0 || e.q.Len() != 0 {
		t.Fatal("an invocation without the lease did work")
	}
	if err := e.lease.Release(context.Background(), "dupproducer", "other"); err != nil {
		t.Fatal(err)
	}
	if sum, err := mustNew(t, cfg).Run(context.Background()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("after release: %v %v", sum, err)
	}
	// The run released the lease at its end.
	if ok, cur, err := e.lease.Acquire(context.Background(), "dupproducer", other, time.Minute); !ok || err != nil {
		t.Fatalf("lease not released after the run: held by %v, %v", cur, err)
	}
}

// TestLeaseLostStopsRun: when another invocation takes the lease over, the
// run stops at the next bite with an error wrapping lease.ErrLost, and the
// state holds every completed bite.
func TestLeaseLostStopsRun(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 1000}, nil)
	cfg := e.config(t, p)
	cfg.BiteSize = 100
	cfg.LeaseTTL = 30 * time.Second
	cfg.Holder = lease.Holder{ID: "me"}
	p.onBite = func(ctx context.Context, m looping.Morsel) error {
		if p.bites != 3 {
			return nil
		}
		// Someone takes the lease over (as after a stall past its expiry);
		// the keeper's next renewal is refused.
		if err := e.lease.Release(context.Background(), "dupproducer", "me"); err != nil {
			return err
		}
		if ok, _, err := e.lease.Acquire(context.Background(), "dupproducer", lease.Holder{ID: "usurper"}, time.Hour); !ok || err != nil {
			return fmt.Errorf("usurp: %v %v", ok, err)
		}
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.clk.BlockUntil(wait, 1); err != nil {
			return fmt.Errorf("keeper timer never armed: %w", err)
		}
		e.clk.Advance(cfg.LeaseTTL / 3)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return errors.New("context not cancelled after the lease was lost")
		}
	}
	sum, err := mustNew(t, cfg).Run(context.Background())
	if !errors.Is(err, lease.ErrLost) || sum.Stopped != looping.StopError {
		t.Fatalf("run: %v, %v; want ErrLost", sum, err)
	}
	st, lerr := e.state.Load(context.Background())
	if lerr != nil || st.Morsels[0].Marker != itemName(200) {
		t.Fatalf("saved state %+v %v, want marker after two bites", st, lerr)
	}
}

// TestNoProgressIsAFailure: a bite that makes no progress fails its
// morsel (it would never end otherwise); the other morsels are swept.
func TestNoProgressIsAFailure(t *testing.T) {
	e := newEnv(t)
	prod := looping.ProducerFuncs{
		MorselsFunc: func(context.Context, looping.RunInfo) ([]looping.Morsel, error) {
			return []looping.Morsel{{ID: "stuck"}, {ID: "fine"}}, nil
		},
		BiteFunc: func(_ context.Context, _ looping.RunInfo, m looping.Morsel, _ int, _ looping.Emit) (looping.BiteResult, error) {
			return looping.BiteResult{Marker: m.Marker, Done: m.ID == "fine"}, nil
		},
	}.AsProducer()
	sum, err := mustNew(t, e.config(t, prod)).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 1 || sum.Failed[0].ID != "stuck" ||
		!strings.Contains(sum.Failed[0].Reason, "no progress") || !sum.HasFailures() {
		t.Fatalf("%v %v, want the stuck morsel failed with a no-progress error", sum, err)
	}
}

func TestBadMorsels(t *testing.T) {
	e := newEnv(t)
	prod := looping.ProducerFuncs{
		MorselsFunc: func(context.Context, looping.RunInfo) ([]looping.Morsel, error) {
			return []looping.Morsel{{ID: "a"}, {ID: "a"}, {}}, nil
		},
		BiteFunc: func(context.Context, looping.RunInfo, looping.Morsel, int, looping.Emit) (looping.BiteResult, error) {
			return looping.BiteResult{Done: true}, nil
		},
	}.AsProducer()
	if _, err := mustNew(t, e.config(t, prod)).Run(context.Background()); err == nil {
		t.Fatal("repeated and empty morsel IDs accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := looping.New(looping.Config{LeaseTTL: time.Second, BiteSize: -1, MaxQueueSize: -5, Format: task.Format(9)})
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, want := range []string{"Config.Kind is required", "Config.Producer is required", "Config.Queue is required", "Config.State is required", "Config.Lease is required", "Config.LeaseTTL", "Config.BiteSize", "Config.MaxQueueSize", "Config.Format"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	c := looping.Config{}.WithDefaults()
	if c.MaxQueueSize != looping.DefaultMaxQueueSize || c.BiteSize != looping.DefaultBiteSize || c.LeaseTTL != looping.DefaultLeaseTTL || c.Holder.ID == "" {
		t.Errorf("defaults %+v", c)
	}
}

func TestProgressBarAndSummary(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A", "B"}, map[string]int{"A": 30, "B": 5}, nil)
	cfg := e.config(t, p)
	cfg.BiteSize = 10
	cfg.Progress = looping.ProgressBar
	var out strings.Builder
	cfg.ProgressOutput = &out
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\rdupproducer [") || !strings.Contains(out.String(), "2/2 morsels  35 tasks  4 bites") {
		t.Errorf("bar output %q", out.String())
	}
	var w strings.Builder
	if err := sum.Write(&w); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dupproducer: done after 4 bites, 35 tasks queued; 2/2 morsels done", "DUP", "acct0", "30", "acct1"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("summary %q lacks %q", w.String(), want)
		}
	}
}

func TestProgressLogLines(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 50}, nil)
	cfg := e.config(t, p)
	cfg.BiteSize = 10
	cfg.Progress = looping.ProgressAuto // a strings.Builder is no terminal
	cfg.ProgressOutput = &strings.Builder{}
	cfg.ProgressInterval = time.Minute
	var logs strings.Builder
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p.onBite = func(context.Context, looping.Morsel) error { e.clk.Advance(40 * time.Second); return nil }
	if _, err := mustNew(t, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Five bites 40 s apart, a line at most once a minute: at 80 s and 160 s.
	if n := strings.Count(logs.String(), `msg="producer progress"`); n != 2 {
		t.Errorf("%d progress lines, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `msg="producer invocation finished" producer=dupproducer stopped=done`) {
		t.Errorf("no summary line:\n%s", logs.String())
	}
}
