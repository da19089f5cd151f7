package benchtable

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Meta says where and when a table was measured, for the record
// docs/PERFORMANCE.md keeps.
type Meta struct {
	When     time.Time
	Machine  string   // e.g. "linux/amd64, 2 CPUs (AMD EPYC …), go1.26.0"
	Settings []string // the knobs of the run, e.g. "MILL_BENCH_BIG_BYTES=1073741824"
	Log      string   // where the raw go test output is kept
	// Duration is the whole run's wall time (build and benchmarks), Build
	// the part spent building the test binaries; zero: not stated.
	Duration, Build time.Duration
	// Packages are the packages' own times (Result.PkgTimes).
	Packages []PkgTime
}

// Preamble opens docs/PERFORMANCE.md: what the figures are and how to
// read them. The figures follow, with the date and the machine.
const Preamble = `# Performance

This file is written by ` + "`make bench`" + ` (scripts/bench.sh, then scripts/benchtable)
from its own run; do not edit it by hand. Each benchmark runs once against
the local services. A ratio compares Mill with a baseline measured in the
same run: these machines are shared and noisy, and an emulator (moto is one
Python process) sets absolute rates, so compare ratios and counts, not
rates. Request counts are exact. A row marked n/a says why (skipped: the
service it needs did not answer; or not in this tree). What a loop costs in
money is in [CAPACITY.md](CAPACITY.md); how each benchmark works is in the
doc comment of the benchmark the table names.
`

// WriteMarkdown writes docs/PERFORMANCE.md: the preamble, the run's date,
// machine and settings, and lines as a Markdown table.
func WriteMarkdown(w io.Writer, m Meta, lines []Line) error {
	var b strings.Builder
	b.WriteString(Preamble)
	fmt.Fprintf(&b, "\n## The run of %s\n\n", m.When.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %s\n", mdCell(m.Machine))
	if m.Duration > 0 {
		fmt.Fprintf(&b, "- duration: %s", minutes(m.Duration))
		if m.Build > 0 {
			fmt.Fprintf(&b, " (building the test binaries: %s)", minutes(m.Build))
		}
		b.WriteString("\n")
	}
	if len(m.Packages) > 0 {
		parts := make([]string, len(m.Packages))
		for i, p := range m.Packages {
			parts[i] = short(p.Pkg) + " " + minutes(p.Time)
		}
		fmt.Fprintf(&b, "- per package: %s\n", mdCell(strings.Join(parts, ", ")))
	}
	for _, s := range m.Settings {
		fmt.Fprintf(&b, "- `%s`\n", s)
	}
	if m.Log != "" {
		fmt.Fprintf(&b, "- raw output: `%s` (not kept in the repository)\n", m.Log)
	}
	b.WriteString("\n| measure | Mill | baseline (same run) | ratio | benchmark, or why n/a |\n|---|---|---|---|---|\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(l.Measure), mdCell(l.Value), mdCell(dash(l.Baseline)), mdCell(dash(l.Ratio)), mdCell(l.Source))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell makes s safe inside one table cell: one line, no column breaks.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// minutes formats d as "12 min 5 s" (or "41 s"), to the second.
func minutes(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}
