package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
)

// TestRunsCommand: the list shows each run's counts; a run's view has its
// progress bar; --watch of a completed run draws it once and returns; an
// unknown run is an error, a malformed ID a usage error.
func TestRunsCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	s := pgruns.New(db.Pool)
	t0 := time.Now().Add(-time.Minute).UTC()
	for _, r := range []runs.Run{
		{Producer: runs.ProducerDup, ID: "20260501T030000Z", Scope: "2 morsels", Started: t0},
		{Producer: runs.ProducerBit, ID: "20260501T030000Z", Scope: "5 morsels", Started: t0.Add(time.Second)},
	} {
		if err := s.Start(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Listed(ctx, runs.ProducerDup, "20260501T030000Z", 4, t0); err != nil {
		t.Fatal(err)
	}
	for i, st := range []runs.State{runs.StateDone, runs.StateDone, runs.StateFailed} {
		o := runs.Outcome{Producer: runs.ProducerDup, RunID: "20260501T030000Z", Key: string(rune('a' + i)), State: st, At: t0.Add(time.Duration(i+1) * 10 * time.Second),
			Requests: map[string]int64{"s3 HeadObject": 2, "sqs SendMessageBatch": 1}}
		if _, err := s.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"MILL_DATABASE_URL": url}

	code, out, _ := setupRun(t, env, "runs")
	if code != 0 || !strings.Contains(out, "PRODUCER") || strings.Count(out, "20260501T030000Z") != 2 {
		t.Fatalf("list: %d\n%s", code, out)
	}
	fields := strings.Fields(strings.Split(out, "\n")[2]) // the dup run, started first
	if len(fields) < 9 || fields[0] != "dupproducer" || fields[3] != "running" || fields[4] != "4" || fields[5] != "2" || fields[6] != "1" || fields[8] != "2" {
		t.Fatalf("dup run row %q: want running, 4 queued, 2 done, 1 failed, 2 left", fields)
	}

	code, out, _ = setupRun(t, env, "runs", "20260501T030000Z", "--producer", "dupproducer")
	if code != 0 || !strings.Contains(out, "dupproducer run 20260501T030000Z (2 morsels)") ||
		!strings.Contains(out, "running [###############...............] 2/4") || !strings.Contains(out, "left 2") ||
		!strings.Contains(out, "requests counted: 9 (s3 6, sqs 3); cost $") {
		t.Fatalf("show: %d\n%s", code, out)
	}

	code, out, _ = setupRun(t, env, "runs", "20260501T030000Z", "--json")
	var got []runJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var j runJSON
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("json line %q: %v", line, err)
		}
		got = append(got, j)
	}
	if code != 0 || len(got) != 2 || got[0].Done != 2 || got[0].Left != 2 || got[1].Producer != runs.ProducerBit ||
		got[0].Cost == nil || got[0].Cost.Requests["s3 HeadObject"] != 6 || got[0].Cost.Total <= 0 {
		t.Fatalf("json: %d %+v", code, got)
	}

	// Complete the dup run; --watch then draws it once and returns.
	if _, err := s.Record(ctx, runs.Outcome{Producer: runs.ProducerDup, RunID: "20260501T030000Z", Key: "c", State: runs.StateDone}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, runs.Outcome{Producer: runs.ProducerDup, RunID: "20260501T030000Z", Key: "d", State: runs.StateDead}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Complete(ctx, runs.ProducerDup, "20260501T030000Z", "s3://mill-reports/runs/dupproducer/20260501T030000Z.json", time.Time{}); !ok || err != nil {
		t.Fatalf("complete: %v %v", ok, err)
	}
	code, out, _ = setupRun(t, env, "runs", "20260501T030000Z", "--producer", "dupproducer", "--watch", "--interval", "10ms")
	if code != 0 || !strings.Contains(out, "completed [##############################] 4/4") || !strings.Contains(out, "report s3://mill-reports/runs/dupproducer/") {
		t.Fatalf("watch of a completed run: %d\n%s", code, out)
	}

	if code, _, _ = setupRun(t, env, "runs", "20990101T000000Z"); code != 1 {
		t.Errorf("unknown run: exit %d, want 1", code)
	}
	if code, _, _ = setupRun(t, env, "runs", "../etc"); code != 2 {
		t.Errorf("malformed ID: exit %d, want 2", code)
	}
	if code, _, _ = setupRun(t, env, "runs", "--watch"); code != 2 {
		t.Errorf("--watch without an ID: exit %d, want 2", code)
	}
}
