package testenv

import (
	"cmp"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchRateBytesVar sizes the object of the benchmarks that measure a
// throughput only (a DuraCloud migration, copies to GCS and Azure), apart
// from the "1 GiB" objects of MILL_BENCH_BIG_BYTES whose peak memory
// proves the memory bound: a rate is the same at a quarter of the size,
// in a quarter of the time.
const BenchRateBytesVar = "MILL_BENCH_RATE_BYTES"

// BenchRateBytes returns MILL_BENCH_RATE_BYTES, else MILL_BENCH_BIG_BYTES,
// else 1 GiB; a value that is not a positive byte count fails t.
func BenchRateBytes(t testing.TB) int64 {
	t.Helper()
	for _, name := range []string{BenchRateBytesVar, "MILL_BENCH_BIG_BYTES"} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive byte count", name, v)
			}
			return n
		}
	}
	return 1 << 30
}

// BenchSizes reads the comma-separated positive counts of the setting
// name (def when it is unset), e.g. MILL_BENCH_FLAT_ITEMS=10000,100000;
// a value that is not one fails t.
func BenchSizes(t testing.TB, name, def string) []int {
	t.Helper()
	v := cmp.Or(os.Getenv(name), def)
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: %q is not a positive count", name, v, f)
		}
		out = append(out, n)
	}
	return out
}
