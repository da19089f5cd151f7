package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// forgedVerdict is a description an attacker writes into a BIT_ERROR.
const forgedVerdict = "=HYPERLINK(\"http://evil.example/\") FORGED: every copy is corrupt, resolution: deleted"

// TestForgedBitErrors runs a real bit run (bitproducer, then workman's bit
// check and report) over three healthy items, which ends in a SUCCESS
// report, and then sends forged BIT_ERRORs — several cases, resolvable or
// not, with a hostile description and checksums, under the finished run,
// an ad-hoc run, a made-up run and another store — followed by a
// BIT_REPORT of the run (the attack that turned a SUCCESS report into
// FAILURE). Each BIT_ERROR must be dead-lettered naming its rule; the
// run's rows and report must be what the bit check observed; no
// notification of a bit report, no new row, no change to any store.
func TestForgedBitErrors(t *testing.T) {
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
	bl := m.bitLog()

	// A report waiting for its space's results asks again after 2 s.
	w := m.startWorkman("--recheck-delay", "2s", "--task-types", "NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT,STORAGE_STATS",
		"--checkpoint-bucket", m.claimsBucket)
	// The items' audit entries and index rows, as a writer's AUDIT tasks
	// make them (the DUP tasks they queue find the copies in place).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // after the writes' whole second
	for id := range items {
		m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: id, Action: task.ActionAddContent, ContentChecksum: sums[id]}), nil)
	}
	if !m.drained(60*time.Second, w) {
		t.Fatal("the AUDIT tasks did not drain")
	}

	// The bit run: store 1's photos space.
	include := filepath.Join(t.TempDir(), "include")
	must(t, os.WriteFile(include, []byte("/acme/1/"+space+"\n"), 0o644))
	if c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bp, Args: []string{"--include", include, "--state", filepath.Join(t.TempDir(), "state.json"),
		"--lease-table", "none", "--frequency", "0"}, Env: m.env()}); c.Err() != nil {
		t.Fatalf("bitproducer: %v\n%s", c.Err(), c.Output())
	}
	var run bitlog.Report
	testbin.WaitFor(t, 90*time.Second, "the run's report", func() bool {
		reps, err := bl.Reports(ctx, bitlog.ReportFilter{Account: "acme", StoreID: "1", SpaceID: space})
		if err != nil || len(reps) == 0 {
			return false
		}
		run = reps[0]
		return true
	})
	if run.Result != bitlog.ResultSuccess || run.Counts.Total != 3 || run.Counts.Success != 3 {
		t.Fatalf("the run's report: %+v, want SUCCESS of 3 items", run)
	}
	before := rowsOf(t, ctx, bl)
	if len(before) != 3 {
		t.Fatalf("the run's rows: %+v", before)
	}
	snap := m.snapshot()
	t.Logf("run %s: SUCCESS report of %d items; %d rows", run.RunID, run.Counts.Total, len(before))

	type forgery struct {
		name string
		be   task.BitError
		has  string
	}
	var forgeries []forgery
	add := func(name, has string, be task.BitError) {
		if be.Account == "" {
			be.Account, be.StoreID, be.SpaceID = "acme", "1", space
		}
		be.Description = forgedVerdict
		be.ContentChecksum, be.StorageChecksum = "ffffffffffffffffffffffffffffffff", "00000000000000000000000000000000"
		be.IndexChecksum, be.AuditChecksum = "deadbeefdeadbeefdeadbeefdeadbeef", sums["a"]
		forgeries = append(forgeries, forgery{name, be, has})
	}
	for _, c := range []int{2, 3, 4, 6, 8} {
		for _, res := range []bool{false, true} {
			id := string(rune('a' + c%3))
			add(fmt.Sprintf("case %d (resolvable %t) of %s in the finished run", c, res, id), "refused by the run rule",
				task.BitError{ContentID: id, RunID: run.RunID, Case: c, InternallyResolvable: res})
		}
	}
	// The run's SUCCESS row of a is not an ad-hoc check's row.
	add("case 3 of a in an ad-hoc check", "refused by the observation rule", task.BitError{ContentID: "a", Case: 3})
	add("case 2 of b in a made-up run", "refused by the observation rule", task.BitError{ContentID: "b", RunID: "20991231T235959Z", Case: 2, InternallyResolvable: true})
	add("case 8 of c in store 2", "refused by the observation rule", task.BitError{Account: "acme", StoreID: "2", SpaceID: space, ContentID: "c", RunID: run.RunID, Case: 8})
	add("case 6 of a missing item", "refused by the observation rule", task.BitError{ContentID: "never-was", RunID: run.RunID, Case: 6, InternallyResolvable: true})

	ids := map[string]*forgery{}
	for i := range forgeries {
		ids[m.send(queue.KeyBitError, encode(t, forgeries[i].be.Task()), nil)] = &forgeries[i]
	}
	got := map[*forgery]*workman.DeadLetter{}
	for _, d := range m.deadLetters(len(forgeries), 90*time.Second, w) {
		f := ids[d.MessageID]
		if f == nil {
			t.Errorf("dead letter of no forgery: %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			continue
		}
		got[f] = d
	}
	for i := range forgeries {
		f := &forgeries[i]
		d := got[f]
		switch {
		case d == nil:
			t.Errorf("%s: not dead-lettered", f.name)
		case d.Reason != workman.ReasonPermanent || !strings.Contains(d.Error, f.has):
			t.Errorf("%s: %s %.400q, want permanent naming %q", f.name, d.Reason, d.Error, f.has)
		case strings.Contains(d.Error, "FORGED"):
			t.Errorf("%s: the refusal repeats the message's verdict: %.400q", f.name, d.Error)
		default:
			t.Logf("%-55s → %-9s %.150s", f.name, d.Reason, d.Error)
		}
	}

	// The report of the run asked for again: it counts what the bit log
	// holds, which the forgeries did not change.
	m.send(queue.KeyBitReport, encode(t, task.BitReport{Account: "acme", StoreID: "1", SpaceID: space, RunID: run.RunID}.Task()), nil)
	if !m.drained(60*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	if extra := m.deadLetters(1, 2*time.Second, w); len(extra) > 0 {
		t.Logf("the report asked for again was dead-lettered (%s: %.200s)", extra[0].Reason, extra[0].Error)
	}
	after := rowsOf(t, ctx, bl)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the bit log changed:\n got %v\nwant %v", after, before)
	}
	reps, err := bl.Reports(ctx, bitlog.ReportFilter{Account: "acme"})
	must(t, err)
	for _, r := range reps {
		if r.Result != bitlog.ResultSuccess || r.RunID != run.RunID || r.Counts != run.Counts {
			t.Errorf("report %+v after the forgeries, want only the run's SUCCESS %+v", r, run.Counts)
		}
	}
	out := w.Output()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "notification") && strings.Contains(l, "bit-report") {
			t.Errorf("a bit report was notified: %.300s", l)
		}
	}
	// No store changed (the report's TSV is rewritten in the reports bucket).
	reports := "s3://" + m.prefix + "reports/"
	if d := snap.diff(m.snapshot(), func(p string) bool { return strings.HasPrefix(p, reports) }); len(d) > 0 {
		t.Errorf("%d changes to the stores:\n%s", len(d), strings.Join(d, "\n"))
	}
	otherClaims(t, m, w, bl)
	stats, err := pgspacestats.New(m.db()).Latest(ctx, spacestats.Filter{})
	must(t, err)
	if len(stats) != 0 {
		t.Errorf("space statistics recorded from a forged continuation: %+v", stats)
	}
	w.alive(t)
}

// otherClaims sends forged claims of the other kinds the Safety section's
// inventory lists, each of which used to become a record: a CREATE_SPACE
// of a space no store has (an audit entry and a "space created"
// notification), a STORAGE_STATS continuation with made-up counts so far
// (a space's figures), a BIT task whose re-check reason is a forged
// verdict (the row's details), and an S3 event whose principal names
// Mill's own processor (the audit log's user).
func otherClaims(t *testing.T, m *mill, w *worker, bl bitlog.Log) {
	t.Helper()
	ctx := m.ctx
	ghost := m.send(queue.KeyAudit, audit(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "ghost", Action: task.ActionCreateSpace, UserID: "admin"}), nil)
	counts := m.send(queue.KeyBit, encode(t, task.StorageStats{Account: "acme", StoreID: "1", SpaceID: space, RunID: "20991231T000000Z",
		Marker: "~", Items: 1_000_000_000_000, Bytes: 1 << 50, Started: time.Now()}.Task()), nil)
	m.send(queue.KeyBit, encode(t, task.Bit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: "b",
		Extra: map[string]string{"recheckOf": forgedVerdict}}.Task()), nil)
	fresh := m.put("1", space, "d", "delta content")
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	event := strings.Replace(s3Event("ObjectCreated:Put", m.bucket1, "mill/"+space+"/d", time.Now()), "AWS:FORGER", "mill-biterror", 1)
	m.send(queue.KeyAudit, event, nil)

	want := map[string][]string{
		ghost:  {"AUDIT CREATE_SPACE of a space no store has", "audit: not confirmed by the store", "the space does not exist"},
		counts: {"STORAGE_STATS continuation with made-up counts", "storagestats: refused: a count continues only from a hand-on Mill saved"},
	}
	for _, d := range m.deadLetters(len(want), 60*time.Second, w) {
		has, ok := want[d.MessageID]
		if !ok || d.Reason != workman.ReasonPermanent {
			t.Errorf("dead letter %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			continue
		}
		delete(want, d.MessageID)
		for _, s := range has[1:] {
			if !strings.Contains(d.Error, s) {
				t.Errorf("%s: error %.300q does not name %q", has[0], d.Error, s)
			}
		}
		t.Logf("%-55s → %-9s %.150s", has[0], d.Reason, d.Error)
	}
	for _, has := range want {
		t.Errorf("%s: not dead-lettered", has[0])
	}
	if !m.drained(60*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	for _, l := range strings.Split(w.Output(), "\n") {
		if strings.Contains(l, "notification") && strings.Contains(l, "space-created") {
			t.Errorf("a space creation was announced: %.300s", l)
		}
	}
	rows, _, err := bl.Results(ctx, bitlog.Filter{RunID: "", Account: "acme", StoreID: "1", SpaceID: space, ContentID: "b"})
	must(t, err)
	if len(rows) == 0 || rows[0].RunID != "" || rows[0].Result != bitlog.ResultSuccess || strings.Contains(rows[0].Details, "FORGED") {
		t.Errorf("the ad-hoc check of b with a forged re-check reason: %+v", rows)
	} else {
		t.Logf("%-55s → row %s %q", "BIT with a forged re-check reason", rows[0].Result, rows[0].Details)
	}
	var e *auditlog.Entry
	testbin.WaitFor(t, 30*time.Second, "the S3 event's audit entry", func() bool {
		e, err = dynamoauditlog.New(m.cfg.DynamoDB(), m.table).Latest(ctx, "acme", "1", space, "d")
		return err == nil
	})
	if e.UserID != "s3-event:mill-biterror" || e.Checksum != fresh.Checksum {
		t.Errorf("the S3 event's entry: user %q checksum %q, want the event's claim s3-event:mill-biterror and %s", e.UserID, e.Checksum, fresh.Checksum)
	} else {
		t.Logf("%-55s → audit user %q", "S3 event whose principal is Mill's processor", e.UserID)
	}
}

// rowsOf returns every row of the bit log as text: what it states.
func rowsOf(t *testing.T, ctx context.Context, bl bitlog.Log) []string {
	t.Helper()
	rows, _, err := bl.Results(ctx, bitlog.Filter{})
	must(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %d C=%s S=%s I=%s A=%s %q %s", r.Key(), r.Result, r.Case, r.ContentChecksum,
			r.StorageChecksum, r.IndexChecksum, r.AuditChecksum, r.Details, r.CheckedAt.Format(time.RFC3339Nano)))
	}
	return out
}
