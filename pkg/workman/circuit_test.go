package workman

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/task"
)

// dynamoRefused is what the AWS SDK returns when DynamoDB cannot be
// reached: an operation error around a refused dial.
func dynamoRefused() error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
}

// outageHarness: BIT tasks on q0 need a dependency that is down while down
// is set (the handler answers dynamoRefused()), NOOP tasks on q1 need
// nothing.
func outageHarness(t *testing.T, down *atomic.Bool, cfg func(*Config)) (*harness, *recorder) {
	rec := &recorder{fn: func(ctx context.Context, tk *task.Task) error {
		if tk.Type == task.TypeBit && down.Load() {
			return fmt.Errorf("bit: audit log patch: %w", dynamoRefused())
		}
		return nil
	}}
	h := newHarness(t, harnessOpts{queues: 2, handler: rec, cfg: cfg})
	rec.clk = h.clk
	for i := range 5 {
		h.put(0, task.New(task.TypeBit, map[string]string{"id": fmt.Sprint("bit", i)}))
	}
	return h, rec
}

// TestOutageCountsNoAttempts: a dependency down for two minutes — far
// longer than three attempts at 10 s and 20 s — dead-letters nothing:
// every task runs once the dependency answers, with its attempts
// uncounted, while the tasks that do not need it run throughout.
func TestOutageCountsNoAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		h, rec := outageHarness(t, &down, nil)
		h.start()
		for i := range 4 {
			h.advance(30 * time.Second)
			h.put(1, noopTask(fmt.Sprint("noop", i)))
		}
		h.advance(5 * time.Second)
		if h.dlq.Len() != 0 {
			t.Fatalf("%d tasks dead-lettered during the outage: %+v", h.dlq.Len(), readDLQ(t, h.dlq))
		}
		var noops int
		for _, c := range rec.get() {
			if c.queue == "q1" {
				noops++
			}
		}
		if noops != 4 {
			t.Errorf("%d of 4 tasks that need nothing ran during the outage", noops)
		}
		down.Store(false)
		up := h.clk.Now()
		ok := h.advanceUntil(5*time.Minute, func() bool {
			n := 0
			for _, c := range rec.get() {
				if c.queue == "q0" && c.attempts == 0 && !h.clk.Now().Before(up) {
					n++
				}
			}
			return n >= 5 && h.queues[0].Len() == 0
		})
		if !ok {
			t.Fatalf("after the outage: q0 holds %d, calls %+v", h.queues[0].Len(), rec.get())
		}
		for _, c := range rec.get() {
			if c.attempts != 0 {
				t.Errorf("an attempt was counted: %+v", c)
			}
		}
		if h.dlq.Len() != 0 {
			t.Fatalf("%d dead letters", h.dlq.Len())
		}
	})
}

// TestCircuitProbes: an open circuit takes no task of the types that need
// its dependency (one call finds it down), shows as an outage, and closes
// when its probe answers: the held-back tasks start within a probe
// interval and a round trip.
func TestCircuitProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		var probes atomic.Int32
		dep := "dynamodb"
		h, rec := outageHarness(t, &down, func(c *Config) {
			c.Probes = map[string]Probe{dep: func(context.Context) error {
				probes.Add(1)
				if down.Load() {
					return errors.New("still refused")
				}
				return nil
			}}
		})
		h.start()
		h.advance(2 * time.Minute)
		calls := 0
		for _, c := range rec.get() {
			if c.queue == "q0" {
				calls++
			}
		}
		if calls < 1 || calls > h.m.cfg.Workers {
			t.Errorf("%d BIT calls during a 2-minute outage, want 1..%d (the circuit stops taking them)", calls, h.m.cfg.Workers)
		}
		outs := h.m.Outages()
		if len(outs) != 1 || outs[0].Dependency != dep || !slices.Equal(outs[0].Types, []task.Type{task.TypeBit}) ||
			outs[0].Since.IsZero() || outs[0].Probes < 20 {
			t.Fatalf("outages %+v, want one of %s for BIT probed ~24 times", outs, dep)
		}
		n := probes.Load()
		down.Store(false)
		up := h.clk.Now()
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 && len(rec.get()) >= calls+5 }) {
			t.Fatalf("not resumed: %+v", rec.get())
		}
		last := rec.get()[len(rec.get())-1].at
		if d := last.Sub(up); d > DefaultProbeInterval+2*time.Second {
			t.Errorf("the tasks resumed %v after the dependency came back, want within %v", d, DefaultProbeInterval+2*time.Second)
		}
		if len(h.m.Outages()) != 0 || probes.Load() > n+1 {
			t.Errorf("after recovery: outages %+v, %d more probes", h.m.Outages(), probes.Load()-n)
		}
	})
}

// TestCircuitWithoutProbeRetriesWithBackoff: a dependency without a probe
// is tried again after ProbeInterval, doubling to ProbeMax, so a long
// outage costs a few task calls a minute, none an attempt.
func TestCircuitWithoutProbeRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		h, rec := outageHarness(t, &down, nil)
		h.start()
		h.advance(10 * time.Minute)
		var trials []time.Time
		for _, c := range rec.get() {
			if c.queue == "q0" && (len(trials) == 0 || c.at.Sub(trials[len(trials)-1]) > time.Second) {
				trials = append(trials, c.at)
			}
		}
		// 5, 10, 20, 40, 60, 60… s apart: about 13 trials in ten minutes.
		if len(trials) < 8 || len(trials) > 16 {
			t.Errorf("%d trials in 10 minutes, want ~13: %v", len(trials), trials)
		}
		if h.dlq.Len() != 0 {
			t.Fatalf("%d dead letters", h.dlq.Len())
		}
		down.Store(false)
		if !h.advanceUntil(2*time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatalf("not resumed after the outage")
		}
	})
}

// TestOnDeadLetterHook: the hook is told of a task once it is in the
// dead-letter queue, with the reason and the cause.
func TestOnDeadLetterHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type told struct {
			id, reason, cause string
			dlq               int
		}
		var got []told
		var h *harness
		rec := &recorder{fn: func(context.Context, *task.Task) error { return errors.New("disk on fire") }}
		h = newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) {
			c.OnDeadLetter = func(_ context.Context, tk *task.Task, reason string, cause error) error {
				got = append(got, told{tk.Get("id"), reason, cause.Error(), h.dlq.Len()})
				return nil
			}
		}})
		rec.clk = h.clk
		h.put(0, noopTask("x"))
		h.start()
		if !h.advanceUntil(5*time.Minute, func() bool { return len(got) > 0 }) {
			t.Fatal("the hook was not called")
		}
		if want := (told{"x", ReasonFailed, "disk on fire", 1}); len(got) != 1 || got[0] != want {
			t.Fatalf("hook told %+v, want %+v", got, want)
		}
	})
}
