package benchtable

import (
	"strings"
	"testing"
	"time"
)

func TestWriteMarkdown(t *testing.T) {
	r, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	lines := Compute(r, Rows)
	var sb strings.Builder
	m := Meta{
		When:     time.Date(2026, 11, 24, 21, 5, 0, 0, time.UTC),
		Machine:  "linux/amd64, 2 CPUs | shared",
		Settings: []string{"MILL_BENCH_BIG_BYTES=1073741824"},
		Log:      ".local/bench.log",
		Duration: 11*time.Minute + 40*time.Second,
		Build:    65 * time.Second,
		Packages: r.PkgTimes,
	}
	if err := WriteMarkdown(&sb, m, lines); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"# Performance\n",
		"## The run of 2026-11-24 21:05 UTC\n",
		"- machine: linux/amd64, 2 CPUs \\| shared\n",
		"- `MILL_BENCH_BIG_BYTES=1073741824`\n",
		"- duration: 11 min 40 s (building the test binaries: 1 min 5 s)\n",
		// The packages' own times, from go test's ok and FAIL lines (a
		// build failure has none).
		"- per package: pkg/queue/sqsqueue 6 s, pkg/workman 12 s, pkg/storage/s3store 0 s, test/readpath 3 s",
		"| Throughput: Workman vs raw SDK loop (tasks/s) | 100 tasks/s | 200 raw-tasks/s | 0.5x | pkg/workman BenchmarkEmulatorNoop |\n",
		"| SQS requests/task: Workman steady state (NOOP) | 0.21 req/task | - | - | pkg/workman BenchmarkEmulatorNoop |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// One table row per Rows entry, each with five cells.
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| measure |") {
			rows++
			if n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|"); n != 6 {
				t.Errorf("row with %d cell borders, want 6: %s", n, l)
			}
		}
	}
	if rows != len(Rows) {
		t.Errorf("%d rows, want %d", rows, len(Rows))
	}
}
