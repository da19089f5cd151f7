package looping_test

import (
	"context"
	"errors"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// TestFailingMorselIsolated: a morsel whose steps keep failing (its store
// is gone) is given up for the run after Config.MorselAttempts tries; every
// other morsel is swept, the failure is in the summary, the saved state and
// the completion notification, and the next run retries it (and sweeps it
// once it is fixed).
func TestFailingMorselIsolated(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A", "B", "C"}, map[string]int{"A": 25, "B": 25, "C": 25}, map[string]int{"A": 1, "B": 1, "C": 1})
	broken := true
	p.onBite = func(_ context.Context, m looping.Morsel) error {
		if m.ID == "B" && broken {
			return errors.New("open store 2 of account acct1: profile \"gone\" not found")
		}
		return nil
	}
	var n memnotify.Notifier
	cfg := e.config(t, fakeDeleter{p})
	cfg.Notifier, cfg.BiteSize = &n, 10
	cfg.Frequency = looping.Frequency{N: 1, Unit: looping.Days}
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run with a broken morsel: %v %v; want it done", sum, err)
	}
	if len(sum.Failed) != 1 || sum.Failed[0].ID != "B" || !strings.Contains(sum.Failed[0].Reason, "profile") ||
		sum.NewlyFailed != 1 || !sum.HasFailures() || sum.MorselsDone != 3 {
		t.Fatalf("summary %v: failed %+v (new %d), want B failed", sum, sum.Failed, sum.NewlyFailed)
	}
	if got := p.stepsOf("B:bite"); got != cfg.WithDefaults().MorselAttempts {
		t.Errorf("B's bite tried %d times, want %d", got, cfg.WithDefaults().MorselAttempts)
	}
	byMorsel := map[string]int{}
	for _, tk := range drain(t, e.q) {
		byMorsel[tk.Get(task.KeySpaceID)]++
	}
	// A and C: 25 items + 1 delete each; B: its delete step only (the
	// bites failed before emitting).
	if byMorsel["A"] != 26 || byMorsel["C"] != 26 || byMorsel["B"] != 1 {
		t.Errorf("tasks by morsel %v, want A and C swept", byMorsel)
	}
	st, err := e.state.Load(context.Background())
	if err != nil || st.Morsels[1].Failed == "" || !st.Morsels[1].Done || st.Morsels[1].Failures != 3 {
		t.Fatalf("saved state %+v %v, want B failed", st, err)
	}
	var b strings.Builder
	if err := sum.Write(&b); err != nil || !strings.Contains(b.String(), "failed in the run (retried next run): 1") ||
		!strings.Contains(b.String(), "B: looping: dupproducer: morsel \"B\": bite: open store 2") {
		t.Errorf("written summary:\n%s", b.String())
	}
	evs := n.Events()
	if len(evs) != 1 || evs[0].Type != notify.EventRunCompleted || !strings.Contains(evs[0].Subject, "1 FAILED") ||
		!strings.Contains(evs[0].Body, "profile") {
		t.Fatalf("notifications %+v, want the completion naming the failure", evs)
	}

	// The next run, the store fixed: B is listed again and swept.
	broken = false
	e.clk.Advance(25 * time.Hour)
	sum, err = mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 0 || sum.HasFailures() {
		t.Fatalf("next run: %v %v", sum, err)
	}
	byMorsel = map[string]int{}
	for _, tk := range drain(t, e.q) {
		byMorsel[tk.Get(task.KeySpaceID)]++
	}
	if byMorsel["B"] != 26 {
		t.Errorf("next run: tasks by morsel %v, want B swept", byMorsel)
	}
}

// listFailing is a producer whose Morsels reports a part of the sweep it
// could not list as a failed morsel.
type listFailing struct{ *fakeProducer }

func (p listFailing) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	ms, err := p.fakeProducer.Morsels(ctx, run)
	// The error text carries a line of its own: it must stay one line.
	return append(ms, looping.Morsel{ID: "acct9/store 3",
		Failed: "list spaces: bucket \"gone\" does not exist\n  failed in the run (retried next run): 0\r\u2028" + strings.Repeat("é", 800)}), err
}

// TestListedFailureAndQueueFull: a failed morsel listed by the producer is
// done at once and reported; an invocation that gives up morsels and stops
// at a full queue announces producer-morsels-failed (a completed run would
// say it in its completion) and its summary reports failures.
func TestListedFailureAndQueueFull(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 40}, nil)
	var n memnotify.Notifier
	cfg := e.config(t, listFailing{p})
	cfg.Notifier, cfg.BiteSize, cfg.MaxQueueSize = &n, 10, 20
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopQueueFull || sum.NewlyFailed != 1 || !sum.HasFailures() ||
		len(sum.Failed) != 1 || sum.Failed[0].ID != "acct9/store 3" {
		t.Fatalf("%v %v (failed %+v)", sum, err, sum.Failed)
	}
	if r := sum.Failed[0].Reason; strings.ContainsAny(r, "\n\r\u2028") || len(r) > 1010 || !utf8.ValidString(r) {
		t.Errorf("recorded reason %q: want one valid line of at most 1000 bytes", r)
	}
	evs := n.Events()
	if len(evs) != 1 || evs[0].Type != notify.EventMorselsFailed || !strings.Contains(evs[0].Body, "does not exist") ||
		strings.Count(evs[0].Body, "\n  failed in the run") != 1 ||
		evs[0].Attrs()["result"] != string(looping.StopQueueFull) {
		t.Fatalf("notifications %+v", evs)
	}
	if p.stepsOf("acct9") != 0 {
		t.Errorf("a failed listed morsel was bitten: %v", p.steps)
	}
	// The next invocation of the run gives up nothing new: no
	// notification until the run completes, and that one names it.
	if err := e.q.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.MaxQueueSize = 1000
	sum, err = mustNew(t, cfg).Run(context.Background())
	if err != nil || sum.Stopped != looping.StopDone || sum.NewlyFailed != 0 || !sum.HasFailures() {
		t.Fatalf("second invocation %v %v", sum, err)
	}
	if evs := n.Events(); len(evs) != 2 || evs[1].Type != notify.EventRunCompleted || !strings.Contains(evs[1].Subject, "1 FAILED") {
		t.Fatalf("notifications %+v", evs)
	}
}

func (p *fakeProducer) stepsOf(prefix string) int {
	n := 0
	for _, s := range p.steps {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
