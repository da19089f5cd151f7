package adversarial

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// TestForgedAtRestReferences: BIT tasks naming an at-rest checksum job
// are the way a computed checksum becomes C, so an attacker who can send
// to the bit queue forges them: a job nobody created, the run's real job
// under another ID, a job whose report is not ingested, an item the job
// does not list, another run, no run. Each must be dead-lettered naming
// the rule, with no bit-log row, and no store touched; the producer's
// record (which only bitproducer writes) is what the processor trusts.
func TestForgedAtRestReferences(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	m.put("1", space, "a", "alpha content")
	m.put("1", "other", "b", "bravo content")
	bl := m.bitLog()

	// The producer's record: run R's job of acme/1/photos lists "a" and
	// is ingested with a result for it; run R's job of acme/1/other is
	// still running.
	const run = "20260101T000000Z"
	k := bitlog.AtRestKey{RunID: run, Account: "acme", StoreID: "1", SpaceID: space}
	must(t, bl.AddAtRestObjects(ctx, k, []bitlog.AtRestObject{{ContentID: "a", Size: 13, StorageClass: "GLACIER"}}))
	must(t, bl.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "job-real", State: bitlog.AtRestSubmitted, Objects: 1, Submitted: time.Now()}))
	_, err := bl.RecordAtRestResults(ctx, k, []bitlog.AtRestObject{{ContentID: "a", OK: true, Checksum: "0123456789abcdef0123456789abcdef"}})
	must(t, err)
	must(t, bl.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "job-real", State: bitlog.AtRestIngested, Objects: 1}))
	k2 := bitlog.AtRestKey{RunID: run, Account: "acme", StoreID: "1", SpaceID: "other"}
	must(t, bl.AddAtRestObjects(ctx, k2, []bitlog.AtRestObject{{ContentID: "b", Size: 13}}))
	must(t, bl.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k2, JobID: "job-running", State: bitlog.AtRestSubmitted, Objects: 1, Submitted: time.Now()}))

	bitTask := func(sp, id, runID, job string) *task.Task {
		return task.Bit{Account: "acme", StoreID: "1", SpaceID: sp, ContentID: id, RunID: runID, AtRestJob: job}.Task()
	}
	forgeries := []struct {
		name string
		tk   *task.Task
		has  string
	}{
		{"a job nobody created", bitTask(space, "a", "20260202T000000Z", "job-made-up"), "the run has no at-rest job for the space"},
		{"the run's job under another ID", bitTask(space, "a", run, "job-made-up"), "the run's job for the space is another"},
		{"a job not ingested", bitTask("other", "b", run, "job-running"), "its report not ingested"},
		{"an item the job does not list", bitTask(space, "zzz", run, "job-real"), "the job does not list the item"},
		{"the real job, another space", bitTask("other", "b", run, "job-real"), "the run's job for the space is another"},
		{"no run", bitTask(space, "a", "", "job-real"), "no run"},
	}
	snap := m.snapshot()
	w := m.startWorkman()
	ids := map[string]int{}
	for i, f := range forgeries {
		ids[m.send(queue.KeyBit, encode(t, f.tk), nil)] = i
	}
	got := map[int]*workman.DeadLetter{}
	for _, d := range m.deadLetters(len(forgeries), 90*time.Second, w) {
		i, ok := ids[d.MessageID]
		if !ok {
			t.Errorf("dead letter of no forgery: %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			continue
		}
		got[i] = d
	}
	for i, f := range forgeries {
		d := got[i]
		switch {
		case d == nil:
			t.Errorf("%s: not dead-lettered", f.name)
		case d.Reason != workman.ReasonPermanent || !strings.Contains(d.Error, "at-rest job reference not recorded") || !strings.Contains(d.Error, f.has):
			t.Errorf("%s: %s %.400q, want permanent naming %q", f.name, d.Reason, d.Error, f.has)
		default:
			t.Logf("%-35s → %-9s %.160s", f.name, d.Reason, d.Error)
		}
	}
	if !m.drained(30*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	rows, _, err := bl.Results(ctx, bitlog.Filter{Account: "acme"})
	must(t, err)
	if len(rows) != 0 {
		t.Errorf("forged references made %d bit-log rows: %+v", len(rows), rows)
	}
	if diff := snap.diff(m.snapshot(), func(string) bool { return false }); len(diff) > 0 {
		t.Errorf("the stores changed: %v", diff)
	}
	w.alive(t)
}
