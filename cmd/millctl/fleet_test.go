package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue"
)

// TestFleetPauseResume: millctl fleet shows the records in the table with
// lost ones marked and gone ones counted; pause and resume write the
// pauses every Workman reads, refuse a queue that does not exist, and
// queues shows what is paused.
func TestFleetPauseResume(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := context.Background()
	prefix := testenv.Prefix(t)
	table := prefix + "fleet"
	ddb := cfg.DynamoDB()
	testenv.CleanupQueues(t, cfg.SQS(), prefix)
	testenv.CreateTable(t, ddb, dynamofleet.CreateTableInput(table), dynamofleet.TimeToLiveInput(table))
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: cfg.SQS(), QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reg := dynamofleet.New(ddb, table, nil)
	now := time.Now()
	rec := func(id string, beat time.Time, st fleet.State) fleet.Worker {
		return fleet.Worker{ID: id, Identity: process.Identity{Started: now.Add(-time.Hour)}, Heartbeat: beat, Interval: 30 * time.Second,
			Expires: beat.Add(time.Hour), Queues: []string{prefix + "dup-high", prefix + "bit"}, Pool: 8, State: st,
			Running: map[string]int{"DUP": 2}, Counts: map[string]fleet.Counts{"DUP": {Processed: 40, Failed: 1}, "BIT": {Processed: 2}}}
	}
	sick := rec("sick", now, fleet.StateDegraded)
	sick.Outages = []fleet.Outage{{Dependency: "postgres", Since: now.Add(-2 * time.Minute), Cause: "connection refused", Types: []string{"BIT", "BIT_REPORT"}}}
	for _, w := range []fleet.Worker{
		rec("alive", now, fleet.StateRunning),
		rec("silent", now.Add(-2*time.Minute), fleet.StateRunning),
		rec("left", now, fleet.StateGone),
		sick,
	} {
		if err := reg.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"MILL_FLEET_TABLE": table, "MILL_QUEUE_PREFIX": prefix}

	code, out, _ := setupRun(t, env, "fleet")
	if code != 0 {
		t.Fatalf("fleet exited %d", code)
	}
	if !strings.Contains(out, "! silent") || !strings.Contains(out, "lost") || strings.Contains(out, "left") ||
		!strings.Contains(out, "dup-high,bit") || !strings.Contains(out, "DUP 2") || !strings.Contains(out, "42") {
		t.Errorf("fleet table:\n%s", out)
	}
	if !strings.Contains(out, "workers: 1 running, 1 degraded, 0 paused, 0 draining, 1 lost, 1 gone") || !strings.Contains(out, "pauses: none") ||
		!strings.Contains(out, "outage: sick: postgres down for 2m0s, holding back BIT,BIT_REPORT (connection refused)") {
		t.Errorf("fleet totals:\n%s", out)
	}
	if _, out, _ = setupRun(t, env, "fleet", "--all"); !strings.Contains(out, "left") {
		t.Errorf("--all does not list the gone worker:\n%s", out)
	}

	if code, _, errOut := setupRun(t, env, "pause", "DUP", "no-such-queue"); code != 2 || !strings.Contains(errOut, "no-such-queue") {
		t.Fatalf("pause of a missing queue: exit %d, %s", code, errOut)
	}
	if ps, _ := reg.Pauses(ctx); len(ps) != 0 {
		t.Fatalf("a refused pause command paused %v", ps)
	}
	if code, _, _ := setupRun(t, env, "pause", "--reason", "incident", "DUP", "bit-report"); code != 0 {
		t.Fatal("pause failed")
	}
	ps, err := reg.Pauses(ctx)
	if err != nil || len(ps) != 2 || ps[0].Key() != "queue:"+prefix+"bit-report" || ps[1].Key() != "type:DUP" || ps[1].Reason != "incident" || ps[1].By == "" {
		t.Fatalf("pauses %+v, %v", ps, err)
	}
	_, out, _ = setupRun(t, env, "fleet", "--json")
	var snap fleet.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("fleet --json: %v\n%s", err, out)
	}
	if len(snap.Workers) != 4 || snap.Totals[fleet.StateLost] != 1 || snap.Totals[fleet.StateDegraded] != 1 || len(snap.Pauses) != 2 {
		t.Fatalf("fleet --json: %+v", snap)
	}
	_, out, _ = setupRun(t, env, "queues", "--no-age", "--json")
	var rows []queuestats.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	paused := map[string]string{}
	for _, r := range rows {
		paused[r.Key] = r.Paused
	}
	if paused["dup-high"] != "type DUP" || paused["dup-low"] != "type DUP" || paused["bit-report"] != "queue" || paused["bit"] != "" {
		t.Fatalf("queues paused column: %v", paused)
	}
	if code, out, _ := setupRun(t, env, "resume", "DUP", "bit-report", "BIT"); code != 0 || !strings.Contains(out, "BIT was not paused") {
		t.Fatalf("resume: %d\n%s", code, out)
	}
	if ps, _ := reg.Pauses(ctx); len(ps) != 0 {
		t.Fatalf("after resume: %v", ps)
	}
}
