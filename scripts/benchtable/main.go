// Command benchtable reads `go test -bench` output (files named as
// arguments, or stdin) and prints Mill's benchmark summary table; see
// internal/testkit/benchtable. With -markdown FILE it also writes the table, the
// date, the machine and the run's MILL_BENCH_* settings to FILE as
// Markdown (scripts/bench.sh: docs/PERFORMANCE.md), with the run's
// duration (-duration, -build) and each package's time from the output.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/testkit/benchtable"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	markdown := fs.String("markdown", "", "also write the table as Markdown, with the date and the machine, to this `file`")
	logName := fs.String("log", "", "name the raw output `file` in the Markdown (default: the first argument)")
	took := fs.Duration("duration", 0, "state the run's wall time, build included, in the Markdown (scripts/bench.sh measures it)")
	build := fs.Duration("build", 0, "state the part of -duration spent building the test binaries")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var readers []io.Reader
	for _, a := range fs.Args() {
		f, err := os.Open(a)
		if err != nil {
			return err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	in := stdin
	if len(readers) > 0 {
		in = io.MultiReader(readers...)
	}
	res, err := benchtable.Parse(in)
	if err != nil {
		return err
	}
	lines := benchtable.Compute(res, benchtable.Rows)
	if err := benchtable.Write(stdout, lines); err != nil {
		return err
	}
	if *markdown == "" {
		return nil
	}
	m := benchtable.Meta{When: time.Now(), Machine: machine(), Settings: settings(os.Environ()), Log: *logName,
		Duration: *took, Build: *build, Packages: res.PkgTimes}
	if m.Log == "" && fs.NArg() > 0 {
		m.Log = fs.Arg(0)
	}
	tmp := *markdown + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := benchtable.WriteMarkdown(f, m, lines); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, *markdown)
}

// machine describes this machine: OS and architecture, CPUs and their
// model, the Go version.
func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				s += " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	return s + ", " + runtime.Version()
}

// settings lists the run's MILL_BENCH_* variables and the -bench pattern,
// sorted: what a reader needs to repeat the run.
func settings(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "MILL_BENCH_") || strings.HasPrefix(kv, "BENCH=") {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}
