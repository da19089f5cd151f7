package adversarial

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/task"
)

// TestRunCountsOutcomes: a duplication run through the real binaries.
// dupproducer records the run and stamps its ID on every DUP; Workman,
// killed with SIGKILL partway and restarted, counts each task once, so the
// run ends with done = queued and completes: a JSON report in the reports
// bucket with those counts, and a notification. DUP tasks claiming a run
// no producer recorded (one forged, one DuraCloud-style without any) are
// processed but make no run and change none.
func TestRunCountsOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "dupproducer", "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	const items = 40
	store, id := m.dupRun(t, bins["dupproducer"], items)

	// Forged claims: a valid DUP of an item claiming a run nobody made,
	// and one with no run at all.
	forged := task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: "item-00", RunID: "20990101T000000Z"}.Task()
	m.send(queue.KeyDupHigh, encode(t, forged), nil)
	bare := task.Dup{Account: "acme", StoreID: "1", DestStoreID: "3", SpaceID: space, ContentID: "item-01"}.Task()
	m.send(queue.KeyDupHigh, encode(t, bare), nil)

	// Workman, one worker, killed once some outcomes are counted.
	w := m.startWorkman("--workers", "1")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := store.Get(ctx, runs.ProducerDup, id)
		must(t, err)
		if st.Done >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outcomes counted: %+v\n%s", st, w.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.Kill()
	killed, err := store.Get(ctx, runs.ProducerDup, id)
	must(t, err)
	t.Logf("killed with %d of %d done", killed.Done, killed.Enqueued)

	w = m.startWorkman()
	var st runs.Status
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
		if st, err = store.Get(ctx, runs.ProducerDup, id); err != nil {
			t.Fatal(err)
		}
		if !st.Completed.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run not completed: %+v\n%s", st, w.Stderr())
		}
	}
	if st.Done != st.Enqueued || st.Dead != 0 || st.Failed != 0 || st.Left() != 0 {
		t.Fatalf("completed run %+v: want every queued task done once", st)
	}
	wantLoc := "s3://" + m.prefix + "reports/runs/dupproducer/" + id + ".json"
	if st.Report != wantLoc {
		t.Fatalf("report at %q, want %q", st.Report, wantLoc)
	}
	rep := m.runReport(t, id)
	if rep.RunID != id || rep.Enqueued != st.Enqueued || rep.Done != st.Done || rep.Dead != 0 || len(rep.Failures) != 0 {
		t.Fatalf("report %+v, want the run's counts", rep)
	}
	// Its estimate: every DUP attempt at the documented DUP estimate (2
	// HEADs), priced from workman's price table (the default); its cost,
	// counted: at least the source's HEAD of every copy
	// (TestRunCostCounted checks the counts at a proxy).
	if c := rep.Estimate; c == nil || c.Requests["s3 HeadObject"] < 2*float64(rep.Done) || c.Total <= 0 ||
		c.TakenOn != pricing.Default().TakenOn || !strings.HasPrefix(c.Basis, "estimate") {
		t.Fatalf("report estimate %+v, want the run's requests priced", rep.Estimate)
	}
	if c := rep.Cost; c == nil || c.Requests["s3 HeadObject"] < float64(rep.Done) || c.Total <= 0 || !strings.HasPrefix(c.Basis, "counted") {
		t.Fatalf("report cost %+v, want the run's counted requests priced", rep.Cost)
	}
	_, err = m.s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(m.prefix + "reports"), Key: aws.String("runs/dupproducer/" + id + ".csv")})
	must(t, err)
	w.WaitLine(t, 30*time.Second, "run-report")
	if n := strings.Count(w.Stderr(), `event=run-report`) + strings.Count(w.Stderr(), `"event":"run-report"`); n != 1 {
		t.Errorf("%d run-report notifications, want 1", n)
	}
	if !m.drained(time.Minute, w) {
		t.Fatal("queues not drained")
	}
	all, err := store.List(ctx, 10)
	must(t, err)
	if len(all) != 1 {
		t.Fatalf("%d runs, want the producer's one: forged claims made runs %+v", len(all), all)
	}
	for _, id := range []string{"item-00", "item-01"} {
		if _, err := m.read("2", space, id); err != nil {
			t.Errorf("%s not duplicated: %v", id, err)
		}
	}
}

// TestBitRunCounted: a bit run through the real bitproducer and workman
// is recorded with its BIT and BIT_REPORT tasks, and completes when the
// report is made: every queued task done, the report in the reports
// bucket. The report's re-queued copies (it waits for the checks) count
// as the task they continue, not as more tasks.
func TestBitRunCounted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	bp := testbin.Build(t, "bitproducer")["bitproducer"]
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	items := map[string]string{"a": "alpha content", "b": "bravo content", "c": "charlie content"}
	sums := map[string]string{}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			sums[id] = m.put(s, space, id, body).Checksum
		}
	}
	w := m.startWorkman("--recheck-delay", "2s")
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // after the writes' whole second
	for id := range items {
		m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: id, Action: task.ActionAddContent, ContentChecksum: sums[id]}), nil)
	}
	if !m.drained(60*time.Second, w) {
		t.Fatal("the AUDIT tasks did not drain")
	}
	include := filepath.Join(t.TempDir(), "include")
	must(t, os.WriteFile(include, []byte("/acme/1/"+space+"\n"), 0o644))
	if c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bp, Args: []string{"--include", include, "--state", filepath.Join(t.TempDir(), "state.json"),
		"--lease-table", "none", "--frequency", "0"}, Env: m.env()}); c.Err() != nil {
		t.Fatalf("bitproducer: %v\n%s", c.Err(), c.Output())
	}
	store := pgruns.New(m.db())
	all, err := store.List(ctx, 10)
	must(t, err)
	if len(all) != 1 || all[0].Producer != runs.ProducerBit || all[0].Enqueued != 4 {
		t.Fatalf("runs after bitproducer: %+v, want one bit run of 3 BIT and 1 BIT_REPORT", all)
	}
	var st runs.Status
	testbin.WaitFor(t, 90*time.Second, "the bit run's completion", func() bool {
		st, err = store.Get(ctx, runs.ProducerBit, all[0].ID)
		return err == nil && !st.Completed.IsZero()
	})
	if st.Done != 4 || st.Dead != 0 || st.Report != "s3://"+m.prefix+"reports/runs/bitproducer/"+st.ID+".json" {
		t.Fatalf("completed bit run %+v: want 4 done, the report in the reports bucket", st)
	}
	reps, err := m.bitLog().Reports(ctx, bitlog.ReportFilter{Account: "acme", StoreID: "1", SpaceID: space})
	must(t, err)
	if len(reps) != 1 || reps[0].RunID != st.ID {
		t.Fatalf("bit reports %+v: want the run's, made before the run completed", reps)
	}
}
