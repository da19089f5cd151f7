package memstat

import (
	"os"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
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

// TestResetPeak: after a big allocation is freed, the reset brings the
// peak back under it.
func TestResetPeak(t *testing.T) {
	big := make([]byte, 256<<20)
	for i := range big {
		big[i] = 1
	}
	before := PeakRSSMiB()
	if before < 256 {
		// As above: CI must not pass without the figures the benchmarks need.
		if testenv.InCI() {
			t.Fatalf("CI=true: peak %.0f MiB after touching 256 MiB: /proc not available", before)
		}
		t.Skipf("peak %.0f MiB: /proc not available", before)
	}
	big = nil
	if !ResetPeak() {
		if testenv.InCI() {
			t.Fatal("CI=true: the kernel refused to reset the peak (/proc/self/clear_refs), so the benchmarks' per-phase peaks are wrong")
		}
		t.Skip("the kernel refused to reset the peak")
	}
	if after := PeakRSSMiB(); after >= before-128 {
		t.Errorf("peak %.0f MiB after the reset, %.0f before", after, before)
	}
	_ = big
}

// TestRSSPartsAnonGrows: memory the program touches is anonymous, and the
// binary's code is file-backed.
func TestRSSPartsAnonGrows(t *testing.T) {
	anon, file := RSSParts()
	if anon <= 0 || file <= 0 {
		if testenv.InCI() {
			t.Fatalf("CI=true: RSSParts = %v, %v: /proc not available", anon, file)
		}
		t.Skipf("RSSParts = %v, %v: /proc not available", anon, file)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if after, _ := RSSParts(); after < anon+32 {
		t.Fatalf("anonymous RSS %v MiB after touching 64 MiB (was %v)", after, anon)
	}
	_ = buf[len(buf)-1]
}

// recorder is a testing.TB that records whether it was failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestCheckBound(t *testing.T) {
	for _, c := range []struct {
		peak, bound float64
		fail        bool
	}{
		{peak: 91, bound: 92},
		{peak: 93, bound: 92, fail: true},
		{peak: 101, bound: 200, fail: true}, // over MaxMiB whatever the bound
	} {
		r := &recorder{TB: t}
		CheckBound(r, "copy", c.peak, c.bound)
		if r.failed != c.fail {
			t.Errorf("CheckBound(peak %v, bound %v) failed = %v, want %v", c.peak, c.bound, r.failed, c.fail)
		}
	}
}
