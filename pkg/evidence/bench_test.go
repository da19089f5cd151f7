package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob/dirblob"
)

// goalEventsPerSecond is the goal for the log: 20 times the event
// rate of a 100-million-item archive checked every 90 days (one fixity
// event per item per check).
const goalEventsPerSecond = 20 * 100e6 / (90 * 24 * 3600)

// BenchmarkEvidenceLog appends MILL_BENCH_EVIDENCE_EVENTS events (default
// 100,000) in batches of 1,000 to a log in a directory (one writer, as one
// Workman process), then verifies the whole log and exports one inclusion
// proof. It reports events appended per second against the goal, the
// verification time per million events (extrapolated linearly from the
// log's size when it is smaller), and the size of one proof file.
func BenchmarkEvidenceLog(b *testing.B) {
	n := 100_000
	if s := os.Getenv("MILL_BENCH_EVIDENCE_EVENTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1000 {
			b.Fatalf("MILL_BENCH_EVIDENCE_EVENTS=%q: want a number of at least 1000", s)
		}
		n = v
	}
	const batch = 1000
	ctx := context.Background()
	skey, v := testKey(b)
	events := make([]*Event, n)
	for i := range events {
		events[i] = fixityEvent(i)
	}
	for range b.N {
		d := dirblob.New(b.TempDir(), nil)
		l, err := Open(ctx, d, skey, Options{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for i := 0; i < n; i += batch {
			res, err := l.Append(ctx, events[i:min(i+batch, n)])
			if err != nil {
				b.Fatal(err)
			}
			if res.Appended != min(batch, n-i) {
				b.Fatalf("batch at %d: %d appended", i, res.Appended)
			}
		}
		appendS := time.Since(start).Seconds()
		start = time.Now()
		r, err := Verify(ctx, d, v, VerifyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		verifyS := time.Since(start).Seconds()
		if !r.OK() || r.Leaves != int64(n) {
			b.Fatalf("verify: %d leaves, problems %v", r.Leaves, r.Problems)
		}
		p, err := Prove(ctx, d, v, events[n/2].ID)
		if err != nil {
			b.Fatal(err)
		}
		file, _ := json.Marshal(p)
		if _, _, err := CheckProof(file, v); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/appendS, "events/s")
		b.ReportMetric(goalEventsPerSecond, "goal-events/s")
		b.ReportMetric(float64(n)/appendS/goalEventsPerSecond, "events/goal")
		b.ReportMetric(verifyS*1e6/float64(n), "verify-s/Mevents")
		b.ReportMetric(float64(len(file)), "proof-B")
		b.ReportMetric(float64(len(p.Hashes)), "proof-hashes")
		b.Logf("%d events: append %.2fs, verify %.2fs; proof of leaf %d: %d bytes, %d hashes (%s)", n, appendS, verifyS, p.Index, len(file), len(p.Hashes), fmt.Sprint(r.Checkpoints)+" checkpoints")
	}
}
