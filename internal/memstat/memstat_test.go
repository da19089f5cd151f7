package memstat

import (
	"os"
	"testing"

	"github.com/millfleet/mill/internal/testenv"
)

func TestPeakRSSGrowsWithAnAllocation(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		// The benchmarks' peak-memory figures need /proc: CI must not
		// pass without it.
		if testenv.InCI() {
			t.Fatalf("CI=true: no /proc/self/status, so peak RSS cannot be measured: %v", err)
		}
		t.Skip("no /proc on this system")
	}
	before := PeakRSSMiB()
	if before <= 0 {
		t.Fatalf("PeakRSSMiB = %v, want > 0", before)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if after := PeakRSSMiB(); after < before+32 {
		t.Fatalf("peak RSS %v MiB after touching 64 MiB (was %v)", after, before)
	}
	_ = buf[len(buf)-1]
}
