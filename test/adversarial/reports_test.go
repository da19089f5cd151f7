package adversarial

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestForgedReportsDoNotSilenceFixity: forged BIT_REPORTs — a fresh run
// claiming 0 items, an expected count without a run ID, a fresh run
// claiming a huge count, the ID of a real bitproducer run that did not
// list the space — are each dead-lettered naming the rule, and leave no
// report (row or file) and no notification. A later bitproducer run with
// the README's --skip-recent 60d then checks the spaces, and finds their
// corrupted content; a new empty space gets an EMPTY report, not a
// SUCCESS; a space whose latest report is the producer's own complete
// SUCCESS is still skipped.
func TestForgedReportsDoNotSilenceFixity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	bitproducer := testbin.Build(t, "bitproducer")["bitproducer"]
	m := newMill(t, ctx)
	// Only store 1 holds the spaces: the policy ignores them, so the run
	// checks single copies and no duplication muddies the counts.
	m.writeConfig(nil, map[string]string{"acme-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}], "spacesToIgnore": ["photos", "maps", "docs", "vacant"]}`})
	blog := m.bitLog()
	w := m.startWorkman("--recheck-delay", "1s")

	items := map[string][]string{"photos": {"a", "b", "c"}, "maps": {"m1", "m2"}, "docs": {"x"}}
	for sp, ids := range items {
		for _, id := range ids {
			info := m.put("1", sp, id, sp+"/"+id+" original content")
			m.send(queue.KeyAudit, encode(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: sp, ContentID: id,
				Action: task.ActionAddContent, DateTime: time.Now(), ContentChecksum: info.Checksum}.Task()), nil)
		}
	}
	if !m.drained(time.Minute, w) {
		t.Fatal("the audit tasks were not processed")
	}

	// A real run over docs only: its ID is a run the producer recorded,
	// but not for photos or maps.
	realRun := m.bitRun(t, bitproducer, "state-1.json", "--include", m.includeFile(t, "/acme/1/docs"))
	if !m.drained(2*time.Minute, w) {
		t.Fatal("the first bit run was not processed")
	}
	if reps := m.reports(t, blog, ""); len(reps) != 1 || reps[0].SpaceID != "docs" || reps[0].RunID != realRun || reps[0].Result != bitlog.ResultSuccess {
		t.Fatalf("after the real run: reports %+v, want docs' SUCCESS of run %s", reps, realRun)
	}
	before := len(w.Output())

	zero, huge := int64(0), int64(1)<<50
	forged := []struct {
		name string
		r    task.BitReport
		rule string
	}{
		{"a fresh run claiming 0 items", task.BitReport{SpaceID: "photos", RunID: "20260101T000000Z", Expected: &zero}, bitreport.ErrUnrecordedRun.Error()},
		{"no run ID but 0 items", task.BitReport{SpaceID: "photos", Expected: &zero}, bitreport.ErrNoRun.Error()},
		{"a fresh run claiming 2^50 items", task.BitReport{SpaceID: "maps", RunID: "20260101T000001Z", Expected: &huge}, bitreport.ErrUnrecordedRun.Error()},
		{"a real run that did not list the space", task.BitReport{SpaceID: "photos", RunID: realRun, Expected: &zero}, bitreport.ErrUnrecordedRun.Error()},
		{"a real run that did not list the space, 2^50 items", task.BitReport{SpaceID: "maps", RunID: realRun, Expected: &huge}, bitreport.ErrUnrecordedRun.Error()},
	}
	sent := map[string]int{}
	for i, f := range forged {
		f.r.Account, f.r.StoreID = "acme", "1"
		sent[m.send(queue.KeyBitReport, encode(t, f.r.Task()), nil)] = i
	}
	letters := m.deadLetters(len(forged), 90*time.Second, w)
	got := map[int]*workman.DeadLetter{}
	for _, d := range letters {
		i, ok := sent[d.MessageID]
		if !ok {
			t.Errorf("dead letter of no forged report: %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			continue
		}
		got[i] = d
	}
	for i, f := range forged {
		d := got[i]
		switch {
		case d == nil:
			t.Errorf("%s: not dead-lettered", f.name)
		case d.Reason != workman.ReasonPermanent || !strings.Contains(d.Error, f.rule):
			t.Errorf("%s: dead letter %s %.300q, want permanent naming %q", f.name, d.Reason, d.Error, f.rule)
		default:
			t.Logf("%-50s → %s %.150s", f.name, d.Reason, d.Error)
		}
	}
	if !m.drained(30*time.Second, w) {
		t.Fatal("queues not empty after the forged reports")
	}
	// No trace: no report row, no report file, no notification.
	if reps := m.reports(t, blog, ""); len(reps) != 1 {
		t.Errorf("reports after the forgeries: %+v, want docs' only", reps)
	}
	// docs' report and its cost estimate only (the real run's own
	// completion report, under runs/, is the producer's, not a forgery's).
	var keys []string
	for _, k := range m.reportFiles(t) {
		if !strings.HasPrefix(k, "runs/") {
			keys = append(keys, k)
		}
	}
	if len(keys) != 2 || !strings.Contains(keys[0], "/docs/") || !strings.Contains(keys[1], "/docs/") {
		t.Errorf("report files %v, want docs' only", keys)
	}
	if out := w.Output()[before:]; strings.Contains(out, "Mill: bit report") {
		t.Errorf("notified about a forged report:\n%s", testbin.CutLines(out, 300))
	}

	// The content of photos and maps goes bad.
	for _, id := range []string{"a", "c"} {
		m.put("1", "photos", id, "photos/"+id+" corrupted")
	}
	m.put("1", "maps", "m2", "maps/m2 corrupted")
	// And a new, empty space: checked, nothing found, not a SUCCESS.
	must(t, m.stores["1"].CreateSpace(ctx, "vacant"))

	// The README's cron line: --skip-recent 60d. photos and maps have no
	// trusted report: checked, corruption found. docs has the producer's
	// own complete SUCCESS: skipped.
	run2 := m.bitRun(t, bitproducer, "state-2.json", "--skip-recent", "60d")
	if run2 == realRun {
		t.Fatalf("the second run has the first one's ID %s", run2)
	}
	testbin.WaitFor(t, 2*time.Minute, "the second run's reports", func() bool {
		return len(m.reports(t, blog, run2)) == 3
	})
	byspace := map[string]bitlog.Report{}
	for _, r := range m.reports(t, blog, run2) {
		byspace[r.SpaceID] = r
	}
	for sp, n := range map[string]int64{"photos": 3, "maps": 2} {
		r, ok := byspace[sp]
		if !ok || r.Result == bitlog.ResultSuccess || r.Counts.Total != n || r.Counts.Success != n-int64(map[string]int{"photos": 2, "maps": 1}[sp]) {
			t.Errorf("%s: report %+v, want the corruption found (not SUCCESS, %d items)", sp, r, n)
		}
	}
	if r := byspace["vacant"]; r.Result != bitlog.ResultEmpty || r.Counts.Total != 0 {
		t.Errorf("vacant: report %+v, want EMPTY", r)
	}
	if strings.Contains(w.Output(), "Mill: bit report EMPTY") {
		t.Error("an EMPTY report was notified")
	}
	if _, ok := byspace["docs"]; ok {
		t.Error("docs was checked again despite its recent, complete SUCCESS")
	}
	rows, _, err := blog.Results(ctx, bitlog.Filter{RunID: run2, Account: "acme", StoreID: "1", Limit: 100})
	must(t, err)
	var bad []string
	for _, r := range rows {
		if r.Result != bitlog.ResultSuccess {
			bad = append(bad, r.SpaceID+"/"+r.ContentID)
		}
	}
	slices.Sort(bad)
	if want := []string{"maps/m2", "photos/a", "photos/c"}; !slices.Equal(bad, want) {
		t.Errorf("problem rows %v, want %v", bad, want)
	}
}

// bitRun runs the bitproducer binary once (--frequency 0, its own state
// file, no lease) with args, and returns the run's ID from its summary.
func (m *mill) bitRun(t *testing.T, bin, state string, args ...string) string {
	t.Helper()
	c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bin, Args: append([]string{"--frequency", "0", "--lease-table", "none", "--progress", "off",
		"--state", filepath.Join(m.conf, state)}, args...), Env: m.env()})
	out := c.Output()
	if err := c.Err(); err != nil {
		t.Fatalf("bitproducer %v: %v\n%s", args, err, out)
	}
	t.Logf("bitproducer %v:\n%s", args, out)
	_, after, ok := strings.Cut(out, "\n  run ")
	id, _, _ := strings.Cut(after, " ")
	if !ok || id == "" {
		t.Fatalf("no run ID in the summary:\n%s", out)
	}
	return id
}

// includeFile writes a bitproducer inclusion file of patterns.
func (m *mill) includeFile(t *testing.T, patterns ...string) string {
	t.Helper()
	m.write("include.txt", strings.Join(patterns, "\n")+"\n")
	return filepath.Join(m.conf, "include.txt")
}

// reports returns the bit_report rows (of run, or every run for "").
func (m *mill) reports(t *testing.T, l *pgbitlog.Log, run string) []bitlog.Report {
	t.Helper()
	reps, err := l.Reports(m.ctx, bitlog.ReportFilter{RunID: run, Account: "acme"})
	must(t, err)
	return reps
}

// reportFiles lists the keys of the reports bucket.
func (m *mill) reportFiles(t *testing.T) []string {
	t.Helper()
	out, err := m.s3c.ListObjectsV2(m.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(m.prefix + "reports")})
	must(t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
