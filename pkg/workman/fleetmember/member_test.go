package fleetmember_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/memfleet"
	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/pkg/workman/fleetmember"
	"github.com/millfleet/mill/processors"
)

var (
	_ workman.Pauser   = (*fleetmember.Member)(nil)
	_ metrics.Recorder = (*fleetmember.Member)(nil)
)

// flaky is a Registry whose calls fail while down is set.
type flaky struct {
	fleet.Registry
	mu   sync.Mutex
	down bool
}

func (f *flaky) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }
func (f *flaky) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("service unavailable")
	}
	return nil
}
func (f *flaky) Put(ctx context.Context, w fleet.Worker) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Registry.Put(ctx, w)
}
func (f *flaky) Pauses(ctx context.Context) ([]fleet.Pause, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Registry.Pauses(ctx)
}

type memberHarness struct {
	clk *clock.Fake
	reg *flaky
	m   *fleetmember.Member
}

func newMember(t *testing.T, queues ...string) *memberHarness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := &flaky{Registry: memfleet.New(clk)}
	m, err := fleetmember.New(fleetmember.Config{
		Registry: reg, QueuePrefix: "mill-", Interval: 10 * time.Second, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Self: fleet.Worker{ID: "w1", Identity: process.Identity{Hostname: "h", PID: 7, Started: clk.Now()},
			InstanceID: "i-1", Zone: "us-east-1a", Version: "v1", Queues: queues, Pool: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &memberHarness{clk: clk, reg: reg, m: m}
}

func (h *memberHarness) record(t *testing.T) fleet.Worker {
	t.Helper()
	ws, err := h.reg.Registry.Workers(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("Workers = %v, %v; want one", ws, err)
	}
	return ws[0]
}

func (h *memberHarness) pause(t *testing.T, kind fleet.PauseKind, name string) {
	t.Helper()
	if err := h.reg.Registry.Pause(context.Background(), fleet.Pause{Kind: kind, Name: name, At: h.clk.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestMemberConfigValidation(t *testing.T) {
	_, err := fleetmember.New(fleetmember.Config{Interval: time.Minute, KeepLost: 2 * time.Minute})
	if err == nil {
		t.Fatal("no registry, no ID and a keep-lost shorter than three intervals were accepted")
	}
	for _, want := range []string{"fleetmember: Config.Registry is required", "fleetmember: Config.Self.ID is required", "fleetmember: Config.KeepLost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestMemberBeatAndLeave(t *testing.T) {
	h := newMember(t, "mill-audit", "mill-dup-high")
	ctx := context.Background()
	h.m.InFlight(3)
	h.m.TaskDone(task.TypeDup, processors.ResultSuccess, time.Second)
	h.m.TaskDone(task.TypeDup, processors.ResultFailure, time.Second)
	h.m.TaskDone(task.TypeDup, processors.ResultCanceled, time.Second) // not a result of the task
	h.m.DeadLettered(task.TypeAudit, deadletter.ReasonPermanent)
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	w := h.record(t)
	if w.ID != "w1" || w.InstanceID != "i-1" || w.Zone != "us-east-1a" || w.Pool != 4 || w.Held != 3 ||
		w.State != fleet.StateRunning || w.Interval != 10*time.Second || !w.Expires.Equal(h.clk.Now().Add(fleet.DefaultKeepLost)) {
		t.Fatalf("record %+v", w)
	}
	if w.Counts["DUP"] != (fleet.Counts{Processed: 1, Failed: 1}) || w.Counts["AUDIT"] != (fleet.Counts{DeadLettered: 1}) {
		t.Fatalf("counts %+v", w.Counts)
	}
	h.clk.Advance(5 * time.Second)
	if err := h.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	w = h.record(t)
	if w.State != fleet.StateGone || !w.Heartbeat.Equal(h.clk.Now()) || !w.Expires.Equal(h.clk.Now().Add(fleet.DefaultKeepGone)) {
		t.Fatalf("after Leave: %+v", w)
	}
	// A beat after Leave writes nothing.
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if w := h.record(t); w.State != fleet.StateGone {
		t.Fatalf("a beat after Leave overwrote the goodbye: %+v", w)
	}
}

func TestMemberRunBeatsEveryIntervalAndAtDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newMember(t, "mill-bit")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { h.m.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		if err := h.clk.BlockUntil(ctx, 1); err != nil { // the first beat is written, the timer set
			t.Fatal(err)
		}
		first := h.record(t).Heartbeat
		h.clk.Advance(10 * time.Second)
		settled(t, "a beat after the interval", func() bool { return h.record(t).Heartbeat.After(first) })
		h.m.Drain("SIGTERM")
		settled(t, "a draining beat", func() bool { w := h.record(t); return w.State == fleet.StateDraining && w.Note == "SIGTERM" })
	})
}

// settled waits, inside a synctest bubble, until every goroutine of the
// code under test is blocked, then checks cond.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("%s: not so once the member settled", what)
	}
}

func TestMemberTypePause(t *testing.T) {
	h := newMember(t, "mill-dup-high", "mill-bit")
	ctx := context.Background()
	h.pause(t, fleet.PauseType, "DUP")
	if h.m.QueuePaused("mill-dup-high") {
		t.Fatal("a pause took effect before it was read")
	}
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if !h.m.QueuePaused("mill-dup-high") || !h.m.QueuePaused("mill-dup-low") || h.m.QueuePaused("mill-bit") {
		t.Fatal("DUP pause: want dup-high and dup-low paused, bit not")
	}
	w := h.record(t)
	if w.State != fleet.StateRunning || !slices.Equal(w.Pauses, []string{"type:DUP"}) {
		t.Fatalf("record %+v: want running (bit is not paused) with the DUP pause acknowledged", w)
	}
	h.pause(t, fleet.PauseQueue, "mill-bit")
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if w := h.record(t); w.State != fleet.StatePaused {
		t.Fatalf("every queue paused: state %s", w.State)
	}
	if _, err := h.reg.Registry.Resume(ctx, fleet.PauseType, "DUP"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if h.m.QueuePaused("mill-dup-high") || !h.m.QueuePaused("mill-bit") {
		t.Fatal("after resuming DUP: dup-high still paused, or the bit queue pause lost")
	}
}

func TestMemberMiddleware(t *testing.T) { synctest.Test(t, testMemberMiddleware) }

func testMemberMiddleware(t *testing.T) {
	h := newMember(t, "custom")
	ctx := context.Background()
	mw := h.m.Middleware()
	ran := 0
	var started = make(chan struct{})
	var stopped error
	block := processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		ran++
		if tk.Get("block") != "" {
			close(started)
			<-ctx.Done()
			stopped = ctx.Err()
			return ctx.Err()
		}
		return nil
	})
	handler := mw(block)
	dup := task.New(task.TypeDup, map[string]string{"block": "yes"})
	qctx := processors.WithQueue(ctx, "custom")

	// A running DUP is cancelled when DUP is paused, and handed back.
	done := make(chan error, 1)
	go func() { done <- handler.Handle(qctx, dup) }()
	<-started
	settled(t, "the running DUP in a beat", func() bool { return h.m.Beat(ctx) == nil && h.record(t).Running["DUP"] == 1 })
	h.pause(t, fleet.PauseType, "DUP")
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if why, ok := processors.IsReleased(err); !ok || stopped == nil {
		t.Fatalf("running DUP after the pause: %v (released %q), handler saw %v", err, why, stopped)
	}
	// A DUP arriving while paused is handed back without running, and the
	// queue it came from (not a DUP queue in Mill's layout) is learned.
	ran = 0
	if h.m.QueuePaused("custom") {
		t.Fatal("custom queue paused before a DUP was seen on it")
	}
	err = handler.Handle(qctx, task.New(task.TypeDup, nil))
	if _, ok := processors.IsReleased(err); !ok || ran != 0 {
		t.Fatalf("paused DUP: err %v, handler ran %d times", err, ran)
	}
	if !h.m.QueuePaused("custom") {
		t.Fatal("a queue carrying a paused type is still received from")
	}
	// Other types run.
	if err := handler.Handle(qctx, task.New(task.TypeBit, nil)); err != nil || ran != 1 {
		t.Fatalf("BIT while DUP paused: %v, ran %d", err, ran)
	}
	// Resume: the learned queue is received from again, DUP runs.
	if _, err := h.reg.Registry.Resume(ctx, fleet.PauseType, "DUP"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if h.m.QueuePaused("custom") {
		t.Fatal("learned queue still paused after resume")
	}
	if err := handler.Handle(qctx, task.New(task.TypeDup, nil)); err != nil || ran != 2 {
		t.Fatalf("DUP after resume: %v, ran %d", err, ran)
	}
}

// TestMemberKeepsPausesWhenRegistryFails: an outage of the registry never
// lifts a pause.
func TestMemberKeepsPausesWhenRegistryFails(t *testing.T) {
	h := newMember(t, "mill-dup-high")
	ctx := context.Background()
	h.pause(t, fleet.PauseType, "DUP")
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	h.reg.set(true)
	if err := h.m.Beat(ctx); err == nil {
		t.Fatal("a beat against a failing registry reported success")
	}
	if !h.m.TypePaused(task.TypeDup) || !h.m.QueuePaused("mill-dup-high") {
		t.Fatal("a failed read lifted the pause")
	}
	h.reg.set(false)
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
}
