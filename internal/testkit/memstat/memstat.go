// Package memstat reads the process's peak resident set size, the figure
// Mill's big-object benchmarks report as peak memory.
package memstat

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// PeakRSSMiB returns the process's peak resident set size (VmHWM from
// /proc/self/status) in MiB, or 0 where that file does not exist.
func PeakRSSMiB() float64 { return statusMiB("VmHWM")[0] }

// statusMiB returns the /proc/self/status fields named (in kB there) in
// MiB, zeros where the file or a field does not exist.
func statusMiB(names ...string) []float64 {
	out := make([]float64, len(names))
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for i, name := range names {
			if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				out[i] = kb / 1024
			}
		}
	}
	return out
}

// ResetPeak returns the memory the Go runtime holds but no longer uses to
// the system and resets the peak resident set size to the current one
// (writing 5 to /proc/self/clear_refs), so that PeakRSSMiB measures from
// now: one benchmark process can report the peak of each phase. It
// reports whether the kernel allowed the reset.
func ResetPeak() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// RSSParts returns the process's current resident memory split as
// /proc/self/status splits it, in MiB: anonymous (the Go heap, stacks,
// the runtime) and file-backed (mostly the binary's mapped code), or
// zeros where that file does not exist. A peak over a bound is explained
// by which part grew.
func RSSParts() (anon, file float64) {
	v := statusMiB("RssAnon", "RssFile")
	return v[0], v[1]
}

// MaxMiB is the ceiling of every peak-RSS row of the benchmark table
// (docs/PERFORMANCE.md): a Mill process moving an object of any size at
// the default settings stays under it.
const MaxMiB = 100

// CheckBound reports peak (a phase's PeakRSSMiB) against bound (its
// storage.MemoryBound, in MiB) and fails tb when peak is over bound or
// over MaxMiB, naming the anonymous and file-backed parts of the RSS now
// so a failure says which one grew.
func CheckBound(tb testing.TB, what string, peak, bound float64) {
	tb.Helper()
	anon, file := RSSParts()
	if peak > bound || peak > MaxMiB {
		tb.Errorf("%s: peak RSS %.1f MiB, want under its bound %.0f MiB and under %d MiB (now %.1f MiB anonymous, %.1f MiB file-backed)",
			what, peak, bound, MaxMiB, anon, file)
		return
	}
	tb.Logf("%s: peak RSS %.1f MiB, within its bound %.0f MiB", what, peak, bound)
}
