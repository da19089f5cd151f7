package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
)

// noopFleet makes, under a fresh prefix, the seven queues, a NOOP work
// queue and a fleet table, all removed when the test ends.
func noopFleet(t *testing.T) (prefix, table string, work *sqsqueue.Queue) {
	t.Helper()
	cfg := testenv.AWS(t)
	ctx := context.Background()
	prefix = testenv.Prefix(t)
	table = prefix + "fleet"
	sq, ddb := cfg.SQS(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sq, prefix)
	for _, k := range append(slices.Clone(queue.AllKeys), "noop") {
		if _, err := (setup.Queue{Client: sq, QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CreateTable(t, ddb, dynamofleet.CreateTableInput(table), dynamofleet.TimeToLiveInput(table))
	work, err := sqsqueue.Open(ctx, sq, prefix+"noop", sqsqueue.Config{})
	must(t, err)
	return prefix, table, work
}

func sendNoops(t *testing.T, q queue.Queue, n int) {
	t.Helper()
	var es []queue.SendEntry
	for i := range n {
		b, err := task.Encode(task.New(task.TypeNoop, map[string]string{"id": fmt.Sprint(i)}), task.FormatJSON)
		must(t, err)
		es = append(es, queue.SendEntry{Body: b})
	}
	must(t, q.Send(context.Background(), es...))
}

// TestThreeWorkersKilledAndStopped: three Workman processes appear in
// millctl fleet with their queues, pool and counts; the one killed with
// SIGKILL is shown lost once three intervals pass without its heartbeat
// (and not before); the one stopped with SIGTERM exits 0 and is gone.
func TestThreeWorkersKilledAndStopped(t *testing.T) {
	prefix, table, work := noopFleet(t)
	workman, mctl := bins(t)
	const tasks = 60
	sendNoops(t, work, tasks)
	env := testbin.Env("MILL_FLEET_TABLE="+table, "MILL_QUEUE_PREFIX="+prefix)
	ws := map[string]*proc{}
	for _, id := range []string{"w1", "w2", "w3"} {
		ws[id] = start(t, id, workman, env, workmanArgs(id, prefix, table,
			"--queues", prefix+"noop", "--task-types", "NOOP", "--workers", "2", "--noop-sleep", "50ms", "--instance-metadata=false")...)
	}
	var s fleet.Snapshot
	testbin.WaitFor(t, 60*time.Second, "three running workers that processed every task", func() bool {
		s = snapshot(t, mctl, env)
		return s.Totals[fleet.StateRunning] == 3 && total(s, "NOOP").Processed >= tasks // moto may hand one message to two receives
	})
	for _, w := range s.Workers {
		if !slices.Equal(w.Queues, []string{prefix + "noop"}) || w.Pool != 2 || w.PID == 0 || w.Hostname == "" || w.Interval != interval {
			t.Errorf("worker record %+v", w)
		}
		if w.Counts["NOOP"].Processed == 0 {
			t.Logf("worker %s processed none of the %d tasks (the others were faster)", w.ID, tasks)
		}
	}
	text := millctl(t, mctl, env, "fleet")
	if !strings.Contains(text, "workers: 3 running") || !strings.Contains(text, " noop ") && !strings.Contains(text, prefix+"noop") {
		t.Errorf("millctl fleet:\n%s", text)
	}

	// SIGKILL w1: lost after three intervals without a heartbeat.
	last := byID(snapshot(t, mctl, env))["w1"].Heartbeat
	ws["w1"].Signal(t, syscall.SIGKILL)
	_ = ws["w1"].Wait(t, 10*time.Second)
	var lostAt time.Time
	testbin.WaitFor(t, 10*time.Second, "w1 shown lost", func() bool {
		s := snapshot(t, mctl, env)
		w := byID(s)["w1"]
		last = w.Heartbeat
		if w.State == fleet.StateLost {
			lostAt = s.At
			return true
		}
		if s.At.Sub(w.Heartbeat) > fleet.LostAfter*interval+500*time.Millisecond {
			t.Fatalf("w1 not lost %v after its last heartbeat", s.At.Sub(w.Heartbeat))
		}
		return false
	})
	if d := lostAt.Sub(last); d <= fleet.LostAfter*interval {
		t.Fatalf("w1 shown lost %v after its last heartbeat, before three intervals", d)
	}
	t.Logf("w1 shown lost %v after its last heartbeat", lostAt.Sub(last).Round(time.Millisecond))
	if text := millctl(t, mctl, env, "fleet"); !strings.Contains(text, "! w1") || !strings.Contains(text, "1 lost") {
		t.Errorf("lost worker not marked:\n%s", text)
	}

	// SIGTERM w2: it drains, exits 0 and is gone.
	ws["w2"].Signal(t, syscall.SIGTERM)
	if err := ws["w2"].Wait(t, 30*time.Second); err != nil {
		t.Fatalf("w2 after SIGTERM: %v", err)
	}
	s = snapshot(t, mctl, env)
	m := byID(s)
	if m["w2"].State != fleet.StateGone || m["w3"].State != fleet.StateRunning || m["w1"].State != fleet.StateLost {
		t.Fatalf("after SIGTERM of w2: %v", s.Totals)
	}
	if s.Totals[fleet.StateGone] != 1 || s.Totals[fleet.StateLost] != 1 || s.Totals[fleet.StateRunning] != 1 {
		t.Fatalf("totals %v", s.Totals)
	}
	if text := millctl(t, mctl, env, "fleet"); strings.Contains(text, " w2 ") {
		t.Errorf("gone worker listed without --all:\n%s", text)
	}
	ws["w3"].Signal(t, syscall.SIGTERM)
	must(t, ws["w3"].Wait(t, 30*time.Second))
}
