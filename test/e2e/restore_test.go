package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
)

// TestColdCopiesRestoredEndToEnd: account acme keeps its items in store 1
// (S3, STANDARD) and store 2 (S3, GLACIER and DEEP_ARCHIVE), whose
// archived method is restore. The real binaries run, every request of
// theirs to the emulator counted by a proxy. Run 1 of bitproducer asks
// for one restore (Bulk) per archived copy and queues no BIT for them:
// store 2's report counts none, and coverage says they were never
// verified. The emulator completes a restore at once (S3 takes hours) and
// does not report restore states in listings, so run 2 learns from a Head
// that the copies are restored, asks for no new restore, and queues a BIT
// per copy: workman reads and hashes them (method read), and coverage
// counts every copy of store 2 within target.
func TestColdCopiesRestoredEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := newColdFleet(ctx, t, "restore")
	f.setup()

	// The seed, written directly: n items in both stores, store 2's
	// alternately GLACIER and DEEP_ARCHIVE, with audit entries and index
	// rows.
	const space, n = "scans", 4
	archivedKeys := f.seed(coldSeed{space: space, n: n,
		id:    func(i int) string { return fmt.Sprintf("scan-%02d.tif", i) },
		body:  func(i int) []byte { return []byte(fmt.Sprintf("restored copy %d: %s\n", i, strings.Repeat("r", 50+i))) },
		class: func(i int) string { return []string{"GLACIER", "DEEP_ARCHIVE"}[i%2] },
	})
	restores := func() int {
		return f.counted.count(func(r countedReq) bool {
			return r.method == http.MethodPost && r.bucket == f.coldBucket && archivedKeys[r.key] && strings.Contains(r.query, "restore")
		})
	}
	archivedGets := func() int {
		return f.counted.count(func(r countedReq) bool {
			return r.method == http.MethodGet && r.bucket == f.coldBucket && archivedKeys[r.key]
		})
	}
	producer := func(run string) string {
		return f.bitproducer("--frequency", "0", "--state", filepath.Join(f.conf, run+"-state.json"), "--progress", "off")
	}
	reports := func(store string) []bitlog.Report {
		reps, err := f.bitLog.Reports(ctx, bitlog.ReportFilter{Account: account, StoreID: store, SpaceID: space})
		if err != nil {
			t.Fatal(err)
		}
		return reps
	}

	// 1. Run 1: BITs for store 1, a restore request per archived copy.
	out := producer("run1")
	if got := restores(); got != n {
		t.Fatalf("run 1 sent %d restore requests, want %d (one per archived copy)\n%s", got, n, out)
	}
	if !strings.Contains(out, fmt.Sprintf(`"restores_requested":%d`, n)) {
		t.Errorf("run 1's log does not count %d restores requested:\n%s", n, out)
	}
	if d := f.depth(queue.KeyBit); d != n {
		t.Fatalf("run 1 queued %d BITs, want %d (store 1 only)", d, n)
	}
	w := f.startWorkman("BIT,BIT_REPORT", "bit,bit-report")
	waitReports := func(phase string, k int) {
		t.Helper()
		if !testbin.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
			return len(reports("1")) == k && len(reports("2")) == k && f.depth(queue.KeyBit) == 0
		}) {
			t.Fatalf("%s: reports not made in time (bit %d, dead letters %d)\nworkman:\n%s", phase, f.depth(queue.KeyBit), f.depth(queue.KeyDeadLetter), w.Output())
		}
	}
	waitReports("run 1", 1)
	if r := reports("2")[0]; r.Counts.Total != 0 {
		t.Errorf("store 2's report of run 1: %+v, want no item counted (all being restored)", r)
	}
	if got := archivedGets(); got != 0 {
		t.Errorf("run 1 sent %d GETs of archived objects, want none", got)
	}
	if c := f.storeCoverage("2"); c["copies"] != float64(n) || c["within_target"] != 0.0 || c["never_verified"] != float64(n) {
		t.Errorf("coverage of store 2 after run 1: %v, want %d copies never verified", c, n)
	}

	// 2. Run 2 (a new run: another state, a later second): the copies are
	// restored, so each gets a BIT, and no restore is asked for again.
	waitNextSecond()
	out = producer("run2")
	if got := restores(); got != n {
		t.Errorf("run 2 sent %d more restore requests, want none\n%s", got-n, out)
	}
	waitReports("run 2", 2)
	r2 := reports("2")[0]
	if r2.Result != bitlog.ResultSuccess || r2.Counts.Total != n || r2.Counts.Success != n {
		t.Fatalf("store 2's report of run 2: %+v, want %d SUCCESS", r2, n)
	}
	rows, _, err := f.bitLog.Results(ctx, bitlog.Filter{RunID: r2.RunID, Account: account, StoreID: "2", SpaceID: space, Limit: 100})
	if err != nil || len(rows) != n {
		t.Fatalf("store 2's rows of run 2: %d %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Method != bitlog.MethodRead || !r.Archived || r.Result != bitlog.ResultSuccess {
			t.Errorf("row of %s: %s method %q archived %t (%s), want a read of the restored copy", r.ContentID, r.Result, r.Method, r.Archived, r.Details)
		}
	}
	if got := archivedGets(); got < n {
		t.Errorf("%d GETs of archived objects after run 2, want at least %d (the restored copies read)", got, n)
	}
	if c := f.storeCoverage("2"); c["copies"] != float64(n) || c["within_target"] != float64(n) || c["read"] != float64(n) {
		t.Errorf("coverage of store 2 after run 2: %v, want all %d copies within target, read", c, n)
	}
	if d := f.depth(queue.KeyDeadLetter); d != 0 {
		t.Errorf("%d dead letters", d)
	}
}
