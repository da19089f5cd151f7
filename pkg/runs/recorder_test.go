package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/memruns"
	"github.com/millfleet/mill/pkg/task"
)

var t0 = time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)

func dup(run, content string) *task.Task {
	return task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: content, RunID: run}.Task()
}

func newRecorder(t *testing.T) (*runs.Recorder, *memruns.Store, *memnotify.Notifier, *clock.Fake) {
	clk := clock.NewFake(t0)
	st := memruns.New(clk)
	n := &memnotify.Notifier{}
	return &runs.Recorder{Store: st, Reports: fsreportstore.Store{Dir: t.TempDir()}, Notifier: n, Clock: clk}, st, n, clk
}

func open(t *testing.T, r *runs.Recorder, loc string) []byte {
	t.Helper()
	rc, _, err := r.Reports.(fsreportstore.Store).Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestObserveRefusesUnrecordedRun: a task claiming a run no producer
// recorded is not an error of the task, and makes no run, no report and no
// notification.
func TestObserveRefusesUnrecordedRun(t *testing.T) {
	ctx := context.Background()
	r, st, n, _ := newRecorder(t)
	for _, tk := range []*task.Task{dup("20990101T000000Z", "a"), dup("bad id", "a")} {
		if err := r.Observe(ctx, tk, runs.StateDead, "failed", "boom", 3); err != nil {
			t.Fatalf("observe a forged run: %v, want nil (refused quietly)", err)
		}
	}
	if l, _ := st.List(ctx, 10); len(l) != 0 || len(n.Events()) != 0 {
		t.Fatalf("forged claims made runs %+v or events %+v", l, n.Events())
	}
}

// TestObserveCountsAndCompletes: outcomes count once per task whatever its
// deliveries; the last one completes the run once, with a JSON and CSV
// report naming the dead letter's reason and the run's counted requests
// (every attempt's, redeliveries included) beside the estimate, and one
// notification. Tasks no run counts (BIT_ERROR, an at-rest BIT) are left
// out, their requests too.
func TestObserveCountsAndCompletes(t *testing.T) {
	ctx := context.Background()
	r, st, n, clk := newRecorder(t)
	const id = "20260501T030000Z"
	if err := r.Start(ctx, runs.Run{Producer: runs.ProducerDup, ID: id, Scope: "1 space"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Listed(ctx, runs.ProducerDup, id, 3, time.Time{}); err != nil {
		t.Fatal(err)
	}
	a, b, c := dup(id, "a"), dup(id, "b"), dup(id, "=cmd|calc")
	retried := b.Clone()
	retried.Attempts = 1
	heads := func(n int64) map[string]int64 { return map[string]int64{"s3 HeadObject": n} }
	steps := []struct {
		t     *task.Task
		state runs.State
		reqs  map[string]int64
	}{{a, runs.StateDone, heads(2)}, {a, runs.StateDone, heads(2)},
		{b, runs.StateFailed, map[string]int64{"s3 HeadObject": 5, "s3 CopyObject": 1}}, {retried, runs.StateDone, heads(2)}}
	for _, s := range steps {
		clk.Advance(time.Second)
		if err := r.ObserveCounted(ctx, s.t, s.state, "", "", s.t.Attempts+1, s.reqs); err != nil {
			t.Fatal(err)
		}
	}
	berr := task.BitError{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", RunID: id}.Task()
	if err := r.ObserveCounted(ctx, berr, runs.StateDone, "", "", 1, heads(100)); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Get(ctx, runs.ProducerDup, id)
	if got.Done != 2 || got.Left() != 1 || !got.Completed.IsZero() || len(n.Events()) != 0 {
		t.Fatalf("before the last task: %+v, %d events; want 2 done, 1 left, not completed", got, len(n.Events()))
	}
	clk.Advance(time.Second)
	if err := r.ObserveCounted(ctx, c, runs.StateDead, "permanent", "source item gone", 1, heads(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.ObserveCounted(ctx, c, runs.StateDead, "permanent", "source item gone", 1, heads(1)); err != nil { // redelivered
		t.Fatal(err)
	}
	got, _ = st.Get(ctx, runs.ProducerDup, id)
	if got.Done != 2 || got.Dead != 1 || got.Completed.IsZero() || got.Report == "" {
		t.Fatalf("after the last task: %+v, want completed with a report", got)
	}
	evs := n.Events()
	if len(evs) != 1 || evs[0].Type != notify.EventRunReport || evs[0].Attrs()["run_id"] != id || evs[0].Attrs()["result"] != "FAILURE" {
		t.Fatalf("events %+v, want one run report, FAILURE", evs)
	}
	var rep runs.Report
	if err := json.Unmarshal(open(t, r, got.Report), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Enqueued != 3 || rep.Done != 2 || rep.Dead != 1 || len(rep.Failures) != 1 ||
		rep.Failures[0].Reason != "permanent" || rep.Failures[0].Error != "source item gone" || rep.Scope != "1 space" {
		t.Fatalf("report %+v", rep)
	}
	csvLoc := strings.TrimSuffix(got.Report, ".json") + ".csv"
	body := open(t, r, csvLoc)
	if !strings.Contains(string(body), "DUP,acme/1/photos/=cmd|calc,permanent,source item gone,1,") {
		t.Fatalf("CSV lacks the failure :\n%s", body)
	}
	// The cost, counted: every attempt's requests recorded before the run
	// completed (a twice, b twice, c once: 12 HEADs and a COPY; c's
	// redelivery came after the report), plus the SQS shares of the 4
	// attempts the latest outcomes count, at the default prices.
	prices := pricing.Default()
	shares := 4 * (pricing.EnqueueSQSPerTask + pricing.WorkmanSQSPerTask) * prices.SQSPerMillion / 1e6
	if c := rep.Cost; c == nil || c.Requests["s3 HeadObject"] != 12 || c.Requests["s3 CopyObject"] != 1 || len(c.Requests) != 4 ||
		c.TakenOn != prices.TakenOn || !strings.HasPrefix(c.Basis, "counted") {
		t.Fatalf("report cost %+v, want 12 HEADs and a COPY counted, at the default prices", rep.Cost)
	}
	if want := 12*prices.HeadPer1000/1000 + prices.PutPer1000/1000 + shares; math.Abs(rep.Cost.Total-want) > 1e-12 {
		t.Errorf("report cost $%v, want $%v", rep.Cost.Total, want)
	}
	// The estimate: 4 attempts of DUP tasks (a once, b twice, c once),
	// each the DUP estimate case (2 HEADs).
	if e := rep.Estimate; e == nil || e.Requests["s3 HeadObject"] != 8 || !strings.HasPrefix(e.Basis, "estimate") ||
		math.Abs(e.Total-(8*prices.HeadPer1000/1000+shares)) > 1e-12 {
		t.Fatalf("report estimate %+v, want 8 HEADs", rep.Estimate)
	}
	for _, c := range []*pricing.RequestsEstimate{rep.Cost, rep.Estimate} {
		if !strings.Contains(string(body), "cost_usd,prices_taken_on,basis\n"+strconv.FormatFloat(c.Total, 'f', 6, 64)+","+prices.TakenOn+",") {
			t.Errorf("CSV lacks the cost $%v:\n%s", c.Total, body)
		}
	}
	if !strings.Contains(string(body), "\ns3 HeadObject,12\n") || !strings.Contains(string(body), "\ns3 HeadObject,8\n") {
		t.Errorf("CSV lacks the counted or estimated HEADs:\n%s", body)
	}
	if want := fmt.Sprintf("Cost: $%.4f for 13 (s3 13) requests counted", rep.Cost.Total); !strings.Contains(evs[0].Body, want) ||
		!strings.Contains(evs[0].Body, "Estimated cost from the documented requests per task: $") {
		t.Errorf("notification %q lacks %q or the estimate", evs[0].Body, want)
	}
}

// TestObserveStoreDown: a store error is the caller's to handle (Workman
// leaves the message to come back), not swallowed.
func TestObserveStoreDown(t *testing.T) {
	r := &runs.Recorder{Store: failing{}}
	if err := r.Observe(context.Background(), dup("20260501T030000Z", "a"), runs.StateDone, "", "", 1); err == nil {
		t.Fatal("store down: nil error")
	}
}

type failing struct{ runs.Store }

func (failing) Record(context.Context, runs.Outcome) (runs.Status, error) {
	return runs.Status{}, errors.New("connection refused")
}

// TestContinuedCountsRequests: the requests of an attempt that continued
// its task (no outcome) are added to its run, without counting the task;
// a continued task claiming a run nobody recorded, or no run counts, adds
// nothing and is no error.
func TestContinuedCountsRequests(t *testing.T) {
	ctx := context.Background()
	r, st, _, _ := newRecorder(t)
	const id = "20260501T030000Z"
	if err := r.Start(ctx, runs.Run{Producer: runs.ProducerBit, ID: id}); err != nil {
		t.Fatal(err)
	}
	rep := task.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: id}.Task()
	r.Continued(ctx, rep, map[string]int64{"s3 ListObjectsV2": 2})
	r.Continued(ctx, task.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "20990101T000000Z"}.Task(),
		map[string]int64{"s3 ListObjectsV2": 50})
	r.Continued(ctx, task.BitError{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", RunID: id}.Task(),
		map[string]int64{"s3 GetObject": 50})
	got, err := st.Requests(ctx, runs.ProducerBit, id)
	if err != nil || len(got) != 1 || got["s3 ListObjectsV2"] != 2 {
		t.Fatalf("requests %v %v, want the continued report's 2 LISTs", got, err)
	}
	if s, _ := st.Get(ctx, runs.ProducerBit, id); s.Done+s.Failed+s.Dead != 0 {
		t.Errorf("status %+v: a continued attempt counted as an outcome", s)
	}
}
