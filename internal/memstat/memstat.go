// Package memstat reads the process's peak resident set size, the figure
// Mill's big-object benchmarks report as peak memory.
package memstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// PeakRSSMiB returns the process's peak resident set size (VmHWM from
// /proc/self/status) in MiB, or 0 where that file does not exist.
func PeakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
