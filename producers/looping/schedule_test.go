package looping_test

import (
	"context"
	"errors"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/producers/looping"
)

// TestStartAt: a monthly run with a start time of 02:00 starts only at an
// invocation between 02:00 and the end of the start window, on the day the
// frequency makes it due — whenever the scheduler's invocations happen.
func TestStartAt(t *testing.T) {
	e := newEnv(t)
	e.clk.Set(time.Date(2026, 5, 10, 15, 0, 0, 0, time.UTC))
	p := newFake([]string{"A"}, map[string]int{"A": 3}, nil)
	cfg := e.config(t, p)
	cfg.Frequency = looping.Frequency{N: 1, Unit: looping.Months}
	cfg.StartAt = looping.StartAt{Hour: 2, Loc: time.UTC}
	run := func(want looping.StopReason, next time.Time) {
		t.Helper()
		sum, err := mustNew(t, cfg).Run(context.Background())
		if err != nil || sum.Stopped != want || !sum.NextRun.Equal(next) {
			t.Fatalf("at %v: %v (next %v), %v; want %s, next %v", e.clk.Now(), sum.Stopped, sum.NextRun, err, want, next)
		}
	}
	run(looping.StopNotDue, time.Date(2026, 5, 11, 2, 0, 0, 0, time.UTC)) // 15:00: past today's window
	e.clk.Set(time.Date(2026, 5, 11, 1, 45, 0, 0, time.UTC))
	run(looping.StopNotDue, time.Date(2026, 5, 11, 2, 0, 0, 0, time.UTC)) // a quarter before
	e.clk.Set(time.Date(2026, 5, 11, 2, 10, 0, 0, time.UTC))
	run(looping.StopDone, time.Date(2026, 6, 11, 2, 0, 0, 0, time.UTC)) // the first run; the next a month on, at 02:00
	if p.morsels != 1 {
		t.Fatalf("%d runs, want 1", p.morsels)
	}
	e.clk.Set(time.Date(2026, 6, 11, 1, 59, 0, 0, time.UTC))
	run(looping.StopNotDue, time.Date(2026, 6, 11, 2, 0, 0, 0, time.UTC))
	// The scheduler was down that night: at 09:00 the run waits for the
	// next night rather than start in the day.
	e.clk.Set(time.Date(2026, 6, 11, 9, 0, 0, 0, time.UTC))
	run(looping.StopNotDue, time.Date(2026, 6, 12, 2, 0, 0, 0, time.UTC))
	e.clk.Set(time.Date(2026, 6, 12, 5, 30, 0, 0, time.UTC))
	run(looping.StopDone, time.Date(2026, 7, 12, 2, 0, 0, 0, time.UTC))
	if p.morsels != 2 {
		t.Fatalf("%d runs, want 2", p.morsels)
	}

	// A start time needs days or months.
	bad := e.config(t, p)
	bad.Frequency, bad.StartAt = looping.Frequency{N: 12, Unit: looping.Hours}, looping.StartAt{Hour: 2, Loc: time.UTC}
	if _, err := looping.New(bad); err == nil || !strings.Contains(err.Error(), "must go with a frequency of days or months") {
		t.Errorf("start time with 12h: %v", err)
	}
}

// skipper lists a second morsel it leaves out of the run.
type skipper struct{ *fakeProducer }

func (p skipper) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	ms, err := p.fakeProducer.Morsels(ctx, run)
	ms = append(ms, looping.Morsel{ID: "recent", Skipped: "last report SUCCESS 3 days ago"})
	return ms, err
}

// TestSkippedMorsels: a morsel the producer skips is never bitten, counts
// as done, and the summary says why.
func TestSkippedMorsels(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 3}, nil)
	sum, err := mustNew(t, e.config(t, skipper{p})).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	for _, s := range p.steps {
		if strings.HasPrefix(s, "recent:") {
			t.Errorf("skipped morsel bitten: %v", p.steps)
		}
	}
	if sum.MorselsDone != 2 || sum.MorselsTotal != 2 || len(sum.Skipped) != 1 || sum.Skipped[0].ID != "recent" {
		t.Errorf("summary %+v", sum)
	}
	var b strings.Builder
	_ = sum.Write(&b)
	for _, want := range []string{"2/2 morsels done (1 skipped)", "skipped by the run: 1", "recent: last report SUCCESS 3 days ago"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	st, err := e.state.Load(context.Background())
	if err != nil || len(st.Morsels) != 2 || st.Morsels[1].Skipped == "" || !st.Morsels[1].Done {
		t.Errorf("state %+v %v", st, err)
	}
}

type failingNotifier struct{ n int }

func (f *failingNotifier) Notify(context.Context, notify.Event) error {
	f.n++
	return errors.New("topic gone")
}

// TestRunNotifications: a completed run and a failed invocation are
// announced; a run not due, a full queue and a cancelled invocation are
// not; a notification that fails changes nothing.
func TestRunNotifications(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A", "B"}, map[string]int{"A": 30, "B": 5}, nil)
	var n memnotify.Notifier
	cfg := e.config(t, p)
	cfg.Notifier, cfg.MaxQueueSize, cfg.BiteSize = &n, 20, 10
	cfg.Frequency = looping.Frequency{N: 1, Unit: looping.Days}
	if sum, err := mustNew(t, cfg).Run(context.Background()); err != nil || sum.Stopped != looping.StopQueueFull {
		t.Fatal(sum, err)
	}
	if err := e.q.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	if _, err := mustNew(t, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := n.Events()
	if len(evs) != 1 {
		t.Fatalf("%d notifications after a full queue, a completed run and a run not due; want 1", len(evs))
	}
	ev := evs[0]
	if ev.Type != notify.EventRunCompleted || ev.Subject != "Mill: dupproducer run "+sum.RunID+" completed: 35 tasks, 2 morsels" ||
		ev.Attrs()["producer"] != "dupproducer" || ev.Attrs()["run_id"] != sum.RunID || ev.Attrs()["result"] != "done" ||
		!strings.Contains(ev.Body, "queued by the run so far: 35") {
		t.Errorf("completed: %q %v\n%s", ev.Subject, ev.Attrs(), ev.Body)
	}

	e.clk.Advance(48 * time.Hour)
	e.state.FailSave = func(int) error { return errors.New("injected crash") }
	if _, err := mustNew(t, cfg).Run(context.Background()); err == nil {
		t.Fatal("the injected failure did not fail the invocation")
	}
	e.state.FailSave = nil
	evs = n.Events()
	if len(evs) != 2 || evs[1].Type != notify.EventRunFailed || !strings.Contains(evs[1].Body, "injected crash") ||
		!strings.Contains(evs[1].Subject, "failed") {
		t.Fatalf("failure: %+v", evs)
	}

	// Cancelled (a shutdown): not a failure to announce.
	ctx, cancel := context.WithCancel(context.Background())
	p.onBite = func(context.Context, looping.Morsel) error { cancel(); return ctx.Err() }
	if _, err := mustNew(t, cfg).Run(ctx); err == nil {
		t.Fatal("cancelled invocation reported no error")
	}
	if got := len(n.Events()); got != 2 {
		t.Errorf("%d notifications after a cancelled invocation, want 2", got)
	}

	// A failing notifier is logged and ignored.
	p.onBite = nil
	var f failingNotifier
	cfg.Notifier, cfg.MaxQueueSize = &f, 1000
	if sum, err := mustNew(t, cfg).Run(context.Background()); err != nil || sum.Stopped != looping.StopDone || f.n != 1 {
		t.Fatalf("with a failing notifier: %v %v (notified %d)", sum, err, f.n)
	}
}
