package benchtable

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/millfleet/mill/pkg/queue/sqsqueue
cpu: AMD EPYC
BenchmarkSendReceiveDelete-2   	       1	5012345678 ns/op	         0.3015 req/msg	       399.1 msgs/s
--- BENCH: BenchmarkSendReceiveDelete-2
    bench_test.go:64: requests: map[DeleteMessageBatch:200 ReceiveMessage:203 SendMessageBatch:200]
PASS
ok  	github.com/millfleet/mill/pkg/queue/sqsqueue	6.1s
goos: linux
goarch: amd64
pkg: github.com/millfleet/mill/pkg/workman
cpu: AMD EPYC
BenchmarkEmulatorNoop-2   	       1	9000000000 ns/op	         0.5 ratio	       200.0 raw-tasks/s	         0.2105 req/task	       100.0 tasks/s
PASS
ok  	github.com/millfleet/mill/pkg/workman	12.0s
goos: linux
goarch: amd64
pkg: github.com/millfleet/mill/pkg/storage/s3store
cpu: AMD EPYC
--- SKIP: BenchmarkBigObject
    testenv.go:53: the AWS emulator at http://127.0.0.1:4566 is not reachable: connection refused
PASS
ok  	github.com/millfleet/mill/pkg/storage/s3store	0.1s
goos: linux
goarch: amd64
pkg: github.com/millfleet/mill/test/readpath
BenchmarkBitCheckReadPath-2   	       1	100 ns/op	       500.0 bitcheck_MB/s	       550.0 md5sum_MB/s	        0.9091 ratio	        20.5 peak-rss-MiB	        92 bound-MiB
--- FAIL: BenchmarkCheck-2
    bench_test.go:80: check: boom
FAIL
exit status 1
FAIL	github.com/millfleet/mill/test/readpath	3.2s
# github.com/millfleet/mill/producers/dup [github.com/millfleet/mill/producers/dup.test]
producers/dup/bench_test.go:10:2: undefined: foo
FAIL	github.com/millfleet/mill/producers/dup [build failed]
FAIL
pkg: github.com/millfleet/mill/processors/dup
BenchmarkCopy-2   	       1	100 ns/op	       90.00 mill-MB/s	       100.0 raw-MB/s	         0.9000 mill/raw	        30.00 mill-peak-heap-MiB	        25.00 raw-peak-heap-MiB	        60.00 VmHWM-MiB
ok  	github.com/millfleet/mill/processors/dup	1.0s
`

func TestTable(t *testing.T) {
	r, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Line{}
	for _, l := range Compute(r, Rows) {
		got[l.Measure] = l
	}
	check := func(measure, value, baseline, ratio, source string) {
		t.Helper()
		l, ok := got[measure]
		if !ok {
			t.Fatalf("no row %q", measure)
		}
		if l.Value != value || l.Baseline != baseline || l.Ratio != ratio || !strings.Contains(l.Source, source) {
			t.Errorf("%s:\n got %q %q %q %q\nwant %q %q %q …%q…", measure, l.Value, l.Baseline, l.Ratio, l.Source, value, baseline, ratio, source)
		}
	}
	check("SQS requests/task: Workman steady state (NOOP)", "0.21 req/task", "", "", "pkg/workman BenchmarkEmulatorNoop")
	check("Throughput: Workman vs raw SDK loop (tasks/s)", "100 tasks/s", "200 raw-tasks/s", "0.5x", "BenchmarkEmulatorNoop")
	check("SQS requests/msg: sqsqueue send+receive+delete", "0.301 req/msg", "", "", "sqsqueue BenchmarkSendReceiveDelete")
	check("Peak RSS MiB: s3store big object put+get vs its bound (streams × part size + constant)", "n/a", "", "", "skipped: the AWS emulator at http://127.0.0.1:4566 is not reachable")
	check("Throughput: bit check read path vs md5sum (MB/s)", "500 bitcheck_MB/s", "550 md5sum_MB/s", "0.909x", "test/readpath BenchmarkBitCheckReadPath")
	check("Peak RSS MiB: bit check (download + hash) vs its bound (streams × part size + constant)", "20.50 peak-rss-MiB", "92.00 bound-MiB", "", "BenchmarkBitCheckReadPath")
	check("SQS requests/task: producer enqueue", "n/a", "", "", "package failed: build failed")
	check("Throughput: dup copy vs minimal SDK multipart copy, unshaped (MB/s)", "90.00 mill-MB/s", "100 raw-MB/s", "0.9x", "processors/dup BenchmarkCopy")
	check("Peak RSS MiB: dup copy vs its bound (streams × part size + constant)", "60.00 VmHWM-MiB", "n/a", "", "BenchmarkCopy")
	if r.Find("test/readpath", Rows[0].Name) != nil {
		t.Error("a workman row matched a bit benchmark")
	}
	var fail *Bench
	for _, b := range r.Benches {
		if b.Name == "BenchmarkCheck" {
			fail = b
		}
	}
	if fail == nil || fail.Status != "fail" || fail.Reason != "check: boom" {
		t.Errorf("failed benchmark: %+v", fail)
	}
	var sb strings.Builder
	if err := Write(&sb, Compute(r, Rows)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(sb.String(), "\n"); n != len(Rows)+1 {
		t.Errorf("table has %d lines, want %d:\n%s", n, len(Rows)+1, sb.String())
	}
	t.Log("\n" + sb.String())
}

func TestMissingMetric(t *testing.T) {
	r, _ := Parse(strings.NewReader("pkg: github.com/millfleet/mill/pkg/workman\nBenchmarkEmulatorNoop-2 1 5 ns/op\nok x 1s\n"))
	l := Compute(r, Rows[:1])[0]
	if !l.NA || !strings.Contains(l.Source, "did not report a metric matching ^req/task$") {
		t.Errorf("%+v", l)
	}
}

// A broad row ("producers/", any benchmark) takes the benchmark that
// reports its metric, not the first one its pattern matches; the
// dupproducer's sub-benchmarks (sizes from a setting, smallest first) feed
// the rows of the fewest and of the most spaces.
func TestRowTakesTheBenchmarkReportingItsValue(t *testing.T) {
	const out = `pkg: github.com/millfleet/mill/producers/dup
BenchmarkDupproducerState/spaces=2000-2         	       1	396211407323 ns/op	       588.6 B/changed-morsel	    343334 old-B/changed-morsel	         0.001714 journal/old	      4104 state-PUTs	         0 unexpiring
BenchmarkDupproducerState/spaces=20000-2         	       1	396211407323 ns/op	       600.0 B/changed-morsel	    3000000 old-B/changed-morsel	         0.0002 journal/old	      40000 state-PUTs	         0 unexpiring
ok  	github.com/millfleet/mill/producers/dup	434.795s
pkg: github.com/millfleet/mill/producers/looping
BenchmarkProducerEnqueue-2   	       1	100 ns/op	         0.1000 req/task
ok  	github.com/millfleet/mill/producers/looping	1.0s
`
	r, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Line{}
	for _, l := range Compute(r, Rows) {
		got[l.Measure] = l
	}
	for measure, want := range map[string][3]string{ // value, ratio, source
		"SQS requests/task: producer enqueue": {"0.1 req/task", "", "producers/looping BenchmarkProducerEnqueue"},
		"Dupproducer run, the most spaces of MILL_BENCH_DUP_STATE_SPACES (acceptance: 20,000): state bytes/changed morsel, journal vs whole-state rewrite": {
			"600 B/changed-morsel", "0.0002x", "producers/dup BenchmarkDupproducerState/spaces=20000"},
		"Dupproducer run, the fewest spaces of MILL_BENCH_DUP_STATE_SPACES: state bytes/changed morsel, journal vs whole-state rewrite": {
			"589 B/changed-morsel", "0.00171x", "producers/dup BenchmarkDupproducerState/spaces=2000"},
		"Dupproducer run, the most spaces: state PUTs (one per save or base)": {
			"40000 state-PUTs", "", "producers/dup BenchmarkDupproducerState/spaces=20000"},
		"Dupproducer run, the most spaces: state versions left that no lifecycle rule expires": {
			"0 unexpiring", "", "producers/dup BenchmarkDupproducerState/spaces=20000"},
	} {
		l := got[measure]
		if g := [3]string{l.Value, l.Ratio, l.Source}; g != want {
			t.Errorf("%s: got %q, want %q", measure, g, want)
		}
	}
}
