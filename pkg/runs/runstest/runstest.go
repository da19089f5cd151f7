// Package runstest is the conformance suite of runs.Store: every
// implementation (memruns, pgruns) must pass Run.
package runstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
)

// Harness makes an empty store for each subtest.
type Harness struct {
	New func(t *testing.T) runs.Store
}

var t0 = time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, runs.Store)
	}{
		{"StartKeepsFirst", testStart},
		{"UnknownRunRefused", testUnknownRun},
		{"CountsIdempotent", testCounts},
		{"Complete", testComplete},
		{"ListAndFailures", testListFailures},
		{"Concurrent", testConcurrent},
		{"Invalid", testInvalid},
		{"AttemptsByType", testAttempts},
		{"RequestsSummed", testRequests},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, h.New(t)) })
	}
}

func out(run, key string, st runs.State, at time.Time) runs.Outcome {
	return runs.Outcome{Producer: runs.ProducerDup, RunID: run, Key: key, State: st, Type: task.TypeDup,
		Item: "account=acme content=" + key, At: at}
}

func mustStart(t *testing.T, s runs.Store, producer, id string, at time.Time) {
	t.Helper()
	if err := s.Start(context.Background(), runs.Run{Producer: producer, ID: id, Scope: "2 spaces", Started: at}); err != nil {
		t.Fatal(err)
	}
}

// testStart: a repeated start keeps the first record; the same ID of two
// producers is two runs.
func testStart(t *testing.T, s runs.Store) {
	ctx := context.Background()
	mustStart(t, s, runs.ProducerDup, "20260501T030000Z", t0)
	if err := s.Start(ctx, runs.Run{Producer: runs.ProducerDup, ID: "20260501T030000Z", Scope: "other", Started: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, s, runs.ProducerBit, "20260501T030000Z", t0.Add(time.Minute))
	got, err := s.Get(ctx, runs.ProducerDup, "20260501T030000Z")
	if err != nil || got.Scope != "2 spaces" || !got.Started.Equal(t0) || got.Started.Location() != time.UTC {
		t.Fatalf("dup run %+v %v, want the first start kept", got, err)
	}
	bit, err := s.Get(ctx, runs.ProducerBit, "20260501T030000Z")
	if err != nil || !bit.Started.Equal(t0.Add(time.Minute)) || bit.Producer != runs.ProducerBit {
		t.Fatalf("bit run %+v %v", bit, err)
	}
	if err := s.Enqueued(ctx, runs.ProducerDup, "20260501T030000Z", 5); err != nil {
		t.Fatal(err)
	}
	if bit, _ = s.Get(ctx, runs.ProducerBit, "20260501T030000Z"); bit.Enqueued != 0 {
		t.Fatalf("bit run counts the dup run's tasks: %+v", bit)
	}
}

// testUnknownRun: an outcome, a count or a completion claiming a run no
// producer recorded is refused with ErrNoRun and makes no run.
func testUnknownRun(t *testing.T, s runs.Store) {
	ctx := context.Background()
	mustStart(t, s, runs.ProducerBit, "20260501T030000Z", t0)
	for _, o := range []runs.Outcome{
		out("20990101T000000Z", "k1", runs.StateDone, t0),
		out("20260501T030000Z", "k1", runs.StateDone, t0), // a dup outcome for the bit run
	} {
		if _, err := s.Record(ctx, o); !errors.Is(err, runs.ErrNoRun) {
			t.Errorf("record %+v: %v, want ErrNoRun", o, err)
		}
	}
	if err := s.Enqueued(ctx, runs.ProducerDup, "20990101T000000Z", 1); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("enqueued for an unknown run: %v", err)
	}
	if err := s.Listed(ctx, runs.ProducerDup, "20990101T000000Z", 1, t0); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("listed for an unknown run: %v", err)
	}
	if ok, err := s.Complete(ctx, runs.ProducerDup, "20990101T000000Z", "x", t0); ok || !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("complete an unknown run: %v %v", ok, err)
	}
	if _, err := s.Get(ctx, runs.ProducerDup, "20990101T000000Z"); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("get: %v, want ErrNoRun", err)
	}
	l, err := s.List(ctx, 10)
	if err != nil || len(l) != 1 || l[0].Producer != runs.ProducerBit || l[0].Done != 0 {
		t.Fatalf("runs after refused claims: %+v %v, want the bit run alone, untouched", l, err)
	}
}

// testCounts: redelivered outcomes count once; failed is replaced by a
// final state; a final state is never replaced.
func testCounts(t *testing.T, s runs.Store) {
	ctx := context.Background()
	const id = "20260501T030000Z"
	mustStart(t, s, runs.ProducerDup, id, t0)
	if err := s.Enqueued(ctx, runs.ProducerDup, id, 4); err != nil {
		t.Fatal(err)
	}
	steps := []runs.Outcome{
		out(id, "a", runs.StateDone, t0.Add(1*time.Second)),
		out(id, "a", runs.StateDone, t0.Add(2*time.Second)), // redelivered
		out(id, "b", runs.StateFailed, t0.Add(3*time.Second)),
		out(id, "b", runs.StateFailed, t0.Add(4*time.Second)), // second attempt failed
		out(id, "c", runs.StateFailed, t0.Add(5*time.Second)),
		out(id, "c", runs.StateDead, t0.Add(6*time.Second)),
		out(id, "c", runs.StateDone, t0.Add(7*time.Second)),   // a stale copy: dead stays
		out(id, "a", runs.StateFailed, t0.Add(8*time.Second)), // a stale copy: done stays
	}
	var st runs.Status
	for _, o := range steps {
		var err error
		if st, err = s.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if st.Done != 1 || st.Failed != 1 || st.Dead != 1 || st.Left() != 2 || st.Finished() {
		t.Fatalf("after the steps: %+v, want done 1 failed 1 dead 1 left 2", st)
	}
	if !st.FirstOutcome.Equal(t0.Add(time.Second)) || st.LastOutcome.Before(t0.Add(6*time.Second)) {
		t.Errorf("outcome times %s..%s", st.FirstOutcome, st.LastOutcome)
	}
	got, err := s.Get(ctx, runs.ProducerDup, id)
	if err != nil || got.Done != st.Done || got.Failed != st.Failed || got.Dead != st.Dead || got.Enqueued != 4 {
		t.Fatalf("get %+v %v, want what Record returned", got, err)
	}
}

// testComplete: only a listed run whose tasks all have a final outcome
// completes, once.
func testComplete(t *testing.T, s runs.Store) {
	ctx := context.Background()
	const id = "20260501T030000Z"
	mustStart(t, s, runs.ProducerDup, id, t0)
	if err := s.Enqueued(ctx, runs.ProducerDup, id, 2); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := s.Record(ctx, out(id, k, runs.StateDone, t0.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.Complete(ctx, runs.ProducerDup, id, "early", t0); ok || err != nil {
		t.Fatalf("complete before the producer listed the run: %v %v", ok, err)
	}
	if err := s.Listed(ctx, runs.ProducerDup, id, 3, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Complete(ctx, runs.ProducerDup, id, "early", t0); ok {
		t.Fatal("completed with a task left")
	}
	st, err := s.Record(ctx, out(id, "c", runs.StateDead, t0.Add(2*time.Minute)))
	if err != nil || !st.Finished() {
		t.Fatalf("last outcome: %+v %v, want finished", st, err)
	}
	if ok, err := s.Complete(ctx, runs.ProducerDup, id, "s3://r/runs/x.json", t0.Add(3*time.Minute)); !ok || err != nil {
		t.Fatalf("complete: %v %v", ok, err)
	}
	if ok, err := s.Complete(ctx, runs.ProducerDup, id, "again", t0.Add(4*time.Minute)); ok || err != nil {
		t.Fatalf("second complete: %v %v, want false", ok, err)
	}
	got, _ := s.Get(ctx, runs.ProducerDup, id)
	if got.Report != "s3://r/runs/x.json" || !got.Completed.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("completed run %+v", got)
	}
}

// testListFailures: newest first, limited; failures dead first, with
// their reasons, clipped.
func testListFailures(t *testing.T, s runs.Store) {
	ctx := context.Background()
	for i := range 3 {
		mustStart(t, s, runs.ProducerDup, fmt.Sprintf("2026050%dT030000Z", i+1), t0.AddDate(0, 0, i))
	}
	l, err := s.List(ctx, 2)
	if err != nil || len(l) != 2 || l[0].ID != "20260503T030000Z" || l[1].ID != "20260502T030000Z" {
		t.Fatalf("list %+v %v", l, err)
	}
	const id = "20260501T030000Z"
	long := make([]byte, 3*runs.MaxText)
	for i := range long {
		long[i] = 'x'
	}
	f := out(id, "f", runs.StateFailed, t0.Add(time.Second))
	f.Error = "timeout"
	d := out(id, "d", runs.StateDead, t0.Add(2*time.Second))
	d.Reason, d.Error, d.Attempts = "failed", string(long)+"\nsecond line", 3
	for _, o := range []runs.Outcome{f, d, out(id, "ok", runs.StateDone, t0)} {
		if _, err := s.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := s.Failures(ctx, runs.ProducerDup, id, 10)
	if err != nil || len(fs) != 2 {
		t.Fatalf("failures %+v %v, want 2", fs, err)
	}
	if fs[0].Key != "d" || fs[0].Reason != "failed" || fs[0].Attempts != 3 || len(fs[0].Error) > runs.MaxText || fs[0].Type != task.TypeDup {
		t.Errorf("first failure %+v, want the dead letter, error clipped", fs[0])
	}
	if fs[1].Key != "f" || fs[1].Error != "timeout" || fs[1].Item == "" {
		t.Errorf("second failure %+v", fs[1])
	}
	if fs, _ := s.Failures(ctx, runs.ProducerDup, id, 1); len(fs) != 1 {
		t.Errorf("limit 1: %d failures", len(fs))
	}
}

// testConcurrent: outcomes recorded at once by many workers, some twice,
// count each task once.
func testConcurrent(t *testing.T, s runs.Store) {
	ctx := context.Background()
	const id = "20260501T030000Z"
	mustStart(t, s, runs.ProducerDup, id, t0)
	const n = 40
	if err := s.Listed(ctx, runs.ProducerDup, id, n, t0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Record(ctx, out(id, fmt.Sprint(i%n), runs.StateDone, t0.Add(time.Second)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Get(ctx, runs.ProducerDup, id)
	if err != nil || st.Done != n || !st.Finished() {
		t.Fatalf("status %+v %v, want %d done, finished", st, err, n)
	}
}

// testInvalid: malformed runs and outcomes are refused and write nothing.
func testInvalid(t *testing.T, s runs.Store) {
	ctx := context.Background()
	for _, r := range []runs.Run{
		{Producer: runs.ProducerDup},
		{Producer: "", ID: "20260501T030000Z"},
		{Producer: runs.ProducerDup, ID: "../../etc"},
		{Producer: runs.ProducerDup, ID: string(make([]byte, runs.MaxIDLen+1))},
	} {
		if err := s.Start(ctx, r); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("start %+v: %v, want ErrInvalid", r, err)
		}
	}
	mustStart(t, s, runs.ProducerDup, "20260501T030000Z", t0)
	for _, o := range []runs.Outcome{
		out("20260501T030000Z", "", runs.StateDone, t0),
		out("20260501T030000Z", "k", "won", t0),
		out("bad id", "k", runs.StateDone, t0),
	} {
		if _, err := s.Record(ctx, o); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("record %+v: %v, want ErrInvalid", o, err)
		}
	}
	if err := s.Enqueued(ctx, runs.ProducerDup, "20260501T030000Z", -1); !errors.Is(err, runs.ErrInvalid) {
		t.Errorf("negative count: %v", err)
	}
	if l, _ := s.List(ctx, 10); len(l) != 1 || l[0].Done != 0 {
		t.Errorf("runs %+v, want one untouched", l)
	}
}

// testAttempts: a run's attempts by task type come from each task's latest
// outcome (a stale copy after a final one changes nothing), at least one
// a task; a run no producer recorded is ErrNoRun.
func testAttempts(t *testing.T, s runs.Store) {
	ctx := context.Background()
	const id = "20260501T030000Z"
	mustStart(t, s, runs.ProducerBit, id, t0)
	o := func(key string, typ task.Type, st runs.State, attempts int) runs.Outcome {
		x := out(id, key, st, t0.Add(time.Second))
		x.Producer, x.Type, x.Attempts = runs.ProducerBit, typ, attempts
		return x
	}
	for _, x := range []runs.Outcome{
		o("a", task.TypeBit, runs.StateDone, 1),
		o("b", task.TypeBit, runs.StateFailed, 1),
		o("b", task.TypeBit, runs.StateFailed, 2),
		o("b", task.TypeBit, runs.StateDead, 3),
		o("b", task.TypeBit, runs.StateDone, 9), // a stale copy: dead stays, with its 3
		o("c", task.TypeBit, runs.StateDone, 0), // no count given: one attempt
		o("r", task.TypeBitReport, runs.StateDone, 2),
	} {
		if _, err := s.Record(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Attempts(ctx, runs.ProducerBit, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[task.Type]int64{task.TypeBit: 5, task.TypeBitReport: 2}; !maps.Equal(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	if _, err := s.Attempts(ctx, runs.ProducerBit, "20990101T000000Z"); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("attempts of an unknown run: %v, want ErrNoRun", err)
	}
}

// testRequests: a run's requests are the sum of the requests of every
// outcome recorded for it — retries, and stale copies after a final
// outcome, included — and of AddRequests, kept apart from other runs; a
// malformed count is refused and adds nothing; a run no producer recorded
// is ErrNoRun.
func testRequests(t *testing.T, s runs.Store) {
	ctx := context.Background()
	const id, other = "20260501T030000Z", "20260502T030000Z"
	mustStart(t, s, runs.ProducerDup, id, t0)
	mustStart(t, s, runs.ProducerDup, other, t0)
	if got, err := s.Requests(ctx, runs.ProducerDup, id); err != nil || len(got) != 0 {
		t.Fatalf("requests of a new run: %v %v, want none", got, err)
	}
	o := func(run, key string, st runs.State, reqs map[string]int64) runs.Outcome {
		x := out(run, key, st, t0.Add(time.Second))
		x.Requests = reqs
		return x
	}
	for _, x := range []runs.Outcome{
		o(id, "a", runs.StateFailed, map[string]int64{"s3 HeadObject": 3, "s3 CopyObject": 1}),
		o(id, "a", runs.StateDone, map[string]int64{"s3 HeadObject": 2}),
		o(id, "a", runs.StateDone, map[string]int64{"s3 HeadObject": 2}), // a redelivered copy ran again
		o(id, "b", runs.StateDone, nil),
		o(id, "c", runs.StateDead, map[string]int64{"s3 HeadObject": 1, "sqs SendMessageBatch": 1}),
		o(other, "a", runs.StateDone, map[string]int64{"s3 GetObject": 5}),
	} {
		if _, err := s.Record(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []map[string]int64{
		{"s3 HeadObject": -5},
		{"s3": 1},
		{"s3 Head Object": 1},
		{"s3 HeadObject\n": 1},
		{string(make([]byte, runs.MaxRequestKindLen+1)): 1},
	} {
		if _, err := s.Record(ctx, o(id, "d", runs.StateDone, bad)); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("record with requests %v: %v, want ErrInvalid", bad, err)
		}
	}
	many := map[string]int64{}
	for i := range runs.MaxRequestKinds + 1 {
		many[fmt.Sprintf("s3 Op%d", i)] = 1
	}
	if _, err := s.Record(ctx, o(id, "d", runs.StateDone, many)); !errors.Is(err, runs.ErrInvalid) {
		t.Errorf("record with %d kinds of request: %v, want ErrInvalid", len(many), err)
	}
	got, err := s.Requests(ctx, runs.ProducerDup, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"s3 HeadObject": 8, "s3 CopyObject": 1, "sqs SendMessageBatch": 1}; !maps.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if st, err := s.Get(ctx, runs.ProducerDup, id); err != nil || st.Done != 2 || st.Dead != 1 {
		t.Errorf("status %+v %v: want 2 done and 1 dead, the refused outcomes not counted", st, err)
	}
	if got, err := s.Requests(ctx, runs.ProducerDup, other); err != nil || !maps.Equal(got, map[string]int64{"s3 GetObject": 5}) {
		t.Errorf("the other run's requests: %v %v", got, err)
	}
	if _, err := s.Requests(ctx, runs.ProducerDup, "20990101T000000Z"); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("requests of an unknown run: %v, want ErrNoRun", err)
	}

	// Requests without an outcome (a continued attempt's).
	if err := s.AddRequests(ctx, runs.ProducerDup, other, map[string]int64{"s3 GetObject": 2, "s3 ListObjectsV2": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRequests(ctx, runs.ProducerDup, other, map[string]int64{"s3 GetObject": -1}); !errors.Is(err, runs.ErrInvalid) {
		t.Errorf("add a negative count: %v, want ErrInvalid", err)
	}
	if err := s.AddRequests(ctx, runs.ProducerDup, "20990101T000000Z", map[string]int64{"s3 GetObject": 1}); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("add requests to an unknown run: %v, want ErrNoRun", err)
	}
	if got, err := s.Requests(ctx, runs.ProducerDup, other); err != nil || !maps.Equal(got, map[string]int64{"s3 GetObject": 7, "s3 ListObjectsV2": 1}) {
		t.Errorf("the other run's requests after AddRequests: %v %v", got, err)
	}
	if st, err := s.Get(ctx, runs.ProducerDup, other); err != nil || st.Done != 1 {
		t.Errorf("the other run's status %+v %v: AddRequests changed its counts", st, err)
	}
	if l, _ := s.List(ctx, 10); len(l) != 2 {
		t.Errorf("%d runs, want AddRequests to make none", len(l))
	}
}
