package adversarial

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TestTruncatedReadIsNoFalseAlarm: Workman and the producers reach S3
// through an HTTP proxy (internal/testkit/faultproxy) that, once the
// items are in place, cuts the body of exactly one GET of the bit check
// of item b: half the bytes, no Content-Length, a Content-Range that
// frames the half as the whole object — a response the SDK cannot tell
// from a smaller object's, so the check hashes a truncated read and its
// checksum disagrees with the copy's. The check must read b again (a
// second GET of it) and record it healthy: the run's rows are three
// SUCCESSes, b's saying a re-read was needed; 0 FAILURE rows, no
// BIT_ERROR, a SUCCESS report.
func TestTruncatedReadIsNoFalseAlarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	bp := testbin.Build(t, "bitproducer")["bitproducer"]
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	proxy := testenv.EmulatorProxy(t)
	m.extraEnv = []string{"AWS_ENDPOINT_URL_S3=" + proxy.URL()}

	items := map[string]string{"a": "alpha content", "b": strings.Repeat("bravo content, long enough to cut. ", 40), "c": "charlie content"}
	sums := map[string]string{}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			sums[id] = m.put(s, space, id, body).Checksum
		}
	}
	w := m.startWorkman("--recheck-delay", "2s", "--task-types", "NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT,STORAGE_STATS",
		"--checkpoint-bucket", m.claimsBucket)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // after the writes' whole second
	for id := range items {
		m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: id, Action: task.ActionAddContent, ContentChecksum: sums[id]}), nil)
	}
	if !m.drained(60*time.Second, w) {
		t.Fatal("the AUDIT tasks did not drain")
	}

	// From now on, the next GET of store 1's b is cut.
	bPath := "/" + m.bucket1 + "/mill/" + space + "/b"
	isB := func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == bPath }
	seen := len(proxy.Requests())
	proxy.CutBody(isB)

	include := filepath.Join(t.TempDir(), "include")
	must(t, os.WriteFile(include, []byte("/acme/1/"+space+"\n"), 0o644))
	if c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bp, Args: []string{"--include", include, "--state", filepath.Join(t.TempDir(), "state.json"),
		"--lease-table", "none", "--frequency", "0"}, Env: m.env()}); c.Err() != nil {
		t.Fatalf("bitproducer: %v\n%s", c.Err(), c.Output())
	}
	bl := m.bitLog()
	var run bitlog.Report
	testbin.WaitFor(t, 90*time.Second, "the run's report", func() bool {
		reps, err := bl.Reports(ctx, bitlog.ReportFilter{Account: "acme", StoreID: "1", SpaceID: space})
		if err != nil || len(reps) == 0 {
			return false
		}
		run = reps[0]
		return true
	})

	if proxy.Cuts() != 1 {
		t.Fatalf("the proxy cut %d responses; want exactly 1 (a GET of %s)", proxy.Cuts(), bPath)
	}
	gets := 0
	for _, r := range proxy.Requests()[seen:] {
		if r == "GET "+bPath {
			gets++
		}
	}
	rows, _, err := bl.Results(ctx, bitlog.Filter{RunID: run.RunID})
	must(t, err)
	failures := 0
	for _, r := range rows {
		if r.Result == bitlog.ResultFailure {
			failures++
			t.Errorf("false FAILURE: %s case %d C=%s S=%s (%s)", r.ContentID, r.Case, r.ContentChecksum, r.StorageChecksum, r.Details)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("the run's rows: %d; want 3 (%+v)", len(rows), rowsOf(t, ctx, bl))
	}
	for _, r := range rows {
		if r.Result != bitlog.ResultSuccess || r.Case != 1 || r.ContentChecksum != sums[r.ContentID] {
			t.Errorf("%s: %s case %d C=%s (%s); want SUCCESS of case 1 with C its MD5", r.ContentID, r.Result, r.Case, r.ContentChecksum, r.Details)
		}
		reread := strings.Contains(r.Details, "re-read") && strings.Contains(r.Details, "the first read was faulty")
		if reread != (r.ContentID == "b") {
			t.Errorf("%s: details %q; want a re-read noted for b only", r.ContentID, r.Details)
		}
	}
	if gets < 2 {
		t.Errorf("%d GETs of b after the cut was armed; want the cut one and a re-read", gets)
	}
	if run.Result != bitlog.ResultSuccess || run.Counts.Total != 3 || run.Counts.Success != 3 {
		t.Errorf("the run's report: %+v; want SUCCESS of 3 items", run)
	}
	if !m.drained(30*time.Second, w) {
		t.Error("the queues did not drain")
	}
	if n := m.depth(queue.KeyDeadLetter); n != 0 {
		t.Errorf("%d dead letters; want none (no BIT_ERROR was sent)", n)
	}
	w.alive(t)
	t.Logf("RESULT reread: 1 GET of b cut, %d GETs of b after, %d FAILURE rows of %d; report %s", gets, failures, len(rows), run.Result)
}
