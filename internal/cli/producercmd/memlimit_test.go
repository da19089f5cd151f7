package producercmd

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestLimitMemory: without GOMEMLIMIT a producer's soft memory limit is
// DefaultMemoryLimit; with it, the operator's value stays.
func TestLimitMemory(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })

	debug.SetMemoryLimit(math.MaxInt64)
	limitMemory(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Errorf("limit without GOMEMLIMIT: %d, want %d", got, DefaultMemoryLimit)
	}

	debug.SetMemoryLimit(123 << 20) // as the runtime applies GOMEMLIMIT=123MiB
	limitMemory(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "123MiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("limit with GOMEMLIMIT=123MiB: %d, want %d", got, 123<<20)
	}
}
