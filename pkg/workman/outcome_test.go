package workman

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

type outcomeRec struct {
	mu   sync.Mutex
	got  []TaskOutcome
	down bool // fail every call
}

func (o *outcomeRec) TaskOutcome(_ context.Context, x TaskOutcome) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return errors.New("database unreachable")
	}
	o.got = append(o.got, x)
	return nil
}

func (o *outcomeRec) setDown(v bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = v
}

func (o *outcomeRec) byID() map[string][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]string{}
	for _, x := range o.got {
		id := x.Task.Get("id")
		s := string(x.Outcome)
		if x.Reason != "" {
			s += ":" + x.Reason
		}
		out[id] = append(out[id], s)
	}
	return out
}

// TestOutcomesObserved: the observer hears every decoded task's outcome:
// done, each failed attempt with its retry, the dead letter with its
// reason, and a success that queued a continuation (processors.Continue)
// as continued; an undecodable body has no task to tell of.
func TestOutcomesObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &outcomeRec{}
		tries := map[string]int{}
		var mu sync.Mutex
		rec := &recorder{fn: func(ctx context.Context, tk *task.Task) error {
			mu.Lock()
			defer mu.Unlock()
			id := tk.Get("id")
			tries[id]++
			switch {
			case id == "flaky" && tries[id] == 1:
				return errors.New("timeout")
			case id == "bad":
				return processors.Permanent(errors.New("no such store"))
			case id == "cont":
				processors.Continue(ctx)
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) { c.Outcomes = obs }})
		rec.clk = h.clk
		h.put(0, noopTask("ok"), noopTask("flaky"), noopTask("bad"), noopTask("cont"))
		if err := h.queues[0].Send(context.Background(), queue.SendEntry{Body: []byte("not a task")}); err != nil {
			t.Fatal(err)
		}
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(obs.byID()["flaky"]) == 2 && h.dlq.Len() == 2 }) {
			t.Fatalf("outcomes %v, %d dead letters", obs.byID(), h.dlq.Len())
		}
		got := obs.byID()
		want := map[string][]string{"ok": {"done"}, "flaky": {"failed", "done"}, "bad": {"dead:" + ReasonPermanent}, "cont": {"continued"}}
		if len(got) != len(want) {
			t.Fatalf("outcomes %v, want %v", got, want)
		}
		for id, w := range want {
			if len(got[id]) != len(w) || (len(w) == 2 && got[id][1] != w[1]) || got[id][0] != w[0] {
				t.Errorf("%s: outcomes %v, want %v", id, got[id], w)
			}
		}
	})
}

// TestOutcomeObserverDownRedelivers: while the observer fails, a finished
// task's message is not deleted (its outcome would be lost): it comes back
// after its visibility timeout and is recorded once the observer answers.
func TestOutcomeObserverDownRedelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &outcomeRec{down: true}
		rec := &recorder{fn: func(context.Context, *task.Task) error { return nil }}
		h := newHarness(t, harnessOpts{handler: rec, vt: 30 * time.Second, cfg: func(c *Config) { c.Outcomes = obs }})
		rec.clk = h.clk
		h.put(0, noopTask("a"))
		h.start()
		if !h.advanceUntil(10*time.Second, func() bool { return len(rec.get()) == 1 }) {
			t.Fatal("task not run")
		}
		h.advance(5 * time.Second)
		if n := h.queues[0].Len(); n != 1 {
			t.Fatalf("%d messages on the queue while the observer is down, want the task's kept", n)
		}
		obs.setDown(false)
		if !h.advanceUntil(2*time.Minute, func() bool { return len(obs.byID()["a"]) == 1 && h.queues[0].Len() == 0 }) {
			t.Fatalf("after the observer came back: outcomes %v, %d messages, %d runs", obs.byID(), h.queues[0].Len(), len(rec.get()))
		}
	})
}

// countingRec is an outcome observer that counts the requests of the
// tasks whose id is not "uncounted".
type countingRec struct{ outcomeRec }

func (c *countingRec) CountsRequests(t *task.Task) bool { return t.Get("id") != "uncounted" }

// TestOutcomesCarryRequests: for a task its observer counts, each attempt
// runs with a fresh pricing.Counter and its outcome carries that
// attempt's counts (the failed one's and the retry's apart); a task it
// does not count runs without a counter; a message's own properties
// cannot set the counts.
func TestOutcomesCarryRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &countingRec{}
		tries := map[string]int{}
		var mu sync.Mutex
		rec := &recorder{fn: func(ctx context.Context, tk *task.Task) error {
			mu.Lock()
			defer mu.Unlock()
			id := tk.Get("id")
			tries[id]++
			c := pricing.FromContext(ctx)
			if (c != nil) != (id != "uncounted") {
				t.Errorf("%s: counter %v", id, c)
			}
			c.Add(pricing.S3, "HeadObject", int64(tries[id])) // as the SDK middleware would
			if id == "flaky" && tries[id] == 1 {
				return errors.New("timeout")
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) { c.Outcomes = obs }})
		rec.clk = h.clk
		forged := noopTask("forged")
		forged.Props["requests"] = `{"s3 HeadObject": 1000000}`
		h.put(0, noopTask("flaky"), noopTask("uncounted"), forged)
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(obs.byID()["flaky"]) == 2 && len(obs.byID()) == 3 }) {
			t.Fatalf("outcomes %v", obs.byID())
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		got := map[string][]int64{}
		for _, x := range obs.got {
			got[x.Task.Get("id")] = append(got[x.Task.Get("id")], x.Requests["s3 HeadObject"])
			if x.Task.Get("id") == "uncounted" && x.Requests != nil {
				t.Errorf("uncounted task's outcome carries %v", x.Requests)
			}
		}
		want := map[string][]int64{"flaky": {1, 2}, "uncounted": {0}, "forged": {1}}
		for id, w := range want {
			if !slices.Equal(got[id], w) {
				t.Errorf("%s: HEADs by attempt %v, want %v", id, got[id], w)
			}
		}
	})
}
