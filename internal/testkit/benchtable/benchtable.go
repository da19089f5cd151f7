// Package benchtable turns the text output of `go test -bench` over Mill's
// packages into the one summary table `make bench` prints: SQS requests per
// task, throughput against raw SDK baselines, hashing against md5sum, and
// peak memory for large objects.
//
// Each row names the benchmark it reads (package and name pattern) and the
// b.ReportMetric units it takes. A row whose benchmark is not in the output
// shows "n/a" with the reason: not in this tree, skipped (with the skip
// message, e.g. the emulator is not running), failed (with the first error
// line), or a metric the benchmark did not report.
package benchtable

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bench is one benchmark's outcome in the output.
type Bench struct {
	Pkg, Name string             // import path; name without the -GOMAXPROCS suffix
	Metrics   map[string]float64 // unit → value (ns/op, B/op and custom ReportMetric units)
	Status    string             // "ok", "skip" or "fail"
	Reason    string             // first message line of a skip or failure
}

// Result is everything Parse read.
type Result struct {
	Benches []*Bench
	// PkgFail maps a package that failed outside any benchmark (build
	// failure, panic, timeout) to its first error line.
	PkgFail map[string]string
	// PkgTimes is each package's wall time as go test printed it on its
	// "ok" or "FAIL" line, in the order of the output.
	PkgTimes []PkgTime
}

// PkgTime is one package's wall time in the run.
type PkgTime struct {
	Pkg  string
	Time time.Duration
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark[^\s]*?)(?:-\d+)?\s+(\d+)\s+(.*)$`)
	resultHdr = regexp.MustCompile(`^--- (SKIP|FAIL|BENCH): (Benchmark[^\s]*?)(?:-\d+)?(?:\s|$)`)
	pkgFail   = regexp.MustCompile(`^FAIL\s+(\S+)\s+(?:\[(.*)\]|[\d.]+s)`)
	pkgTime   = regexp.MustCompile(`^(?:ok|FAIL)\s+(\S+)\s+([\d.]+)s\b`)
)

// Parse reads `go test -bench` text output (several packages may follow
// each other; each starts with a "pkg:" line).
func Parse(r io.Reader) (*Result, error) {
	res := &Result{PkgFail: map[string]string{}}
	byKey := map[string]*Bench{}
	get := func(pkg, name string) *Bench {
		k := pkg + " " + name
		b := byKey[k]
		if b == nil {
			b = &Bench{Pkg: pkg, Name: name, Metrics: map[string]float64{}, Status: "ok"}
			byKey[k] = b
			res.Benches = append(res.Benches, b)
		}
		return b
	}
	var pkg string
	var pending *Bench // the benchmark whose SKIP/FAIL message lines follow
	var lastErr string // the last indented message line seen in this package
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if m := pkgTime.FindStringSubmatch(line); m != nil {
			if secs, err := strconv.ParseFloat(m[2], 64); err == nil {
				res.PkgTimes = append(res.PkgTimes, PkgTime{Pkg: m[1], Time: time.Duration(secs * float64(time.Second))})
			}
		}
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg, pending, lastErr = strings.TrimSpace(line[5:]), nil, ""
			continue
		case strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "ok\t"):
			pending = nil
			continue
		}
		if m := pkgFail.FindStringSubmatch(line); m != nil {
			p := m[1]
			failedBench := false
			for _, b := range res.Benches {
				if b.Pkg == p && b.Status == "fail" {
					failedBench = true
				}
			}
			if !failedBench {
				why := m[2]
				if why == "" {
					why = lastErr
				}
				if why == "" {
					why = "package failed"
				}
				res.PkgFail[p] = why
			}
			pending = nil
			continue
		}
		if m := resultHdr.FindStringSubmatch(line); m != nil {
			b := get(pkg, m[2])
			pending = nil
			switch m[1] {
			case "SKIP":
				b.Status, pending = "skip", b
			case "FAIL":
				b.Status, pending = "fail", b
			}
			continue
		}
		if m := benchLine.FindStringSubmatch(line); m != nil && pkg != "" {
			b := get(pkg, m[1])
			f := strings.Fields(m[3])
			for i := 0; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					break
				}
				b.Metrics[f[i+1]] = v
			}
			pending = nil
			continue
		}
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			msg := trimmed
			// "file_test.go:12: message" → "message"
			if i := strings.Index(msg, ": "); i > 0 && strings.Contains(msg[:i], ".go:") {
				msg = msg[i+2:]
			}
			if pending != nil && pending.Reason == "" && msg != "" {
				pending.Reason = msg
			}
			if msg != "" {
				lastErr = msg
			}
			continue
		}
		if strings.HasPrefix(trimmed, "panic:") || strings.HasPrefix(trimmed, "*** Test killed") {
			lastErr = trimmed
		}
	}
	return res, sc.Err()
}

// Find returns the first benchmark whose package path ends with pkgSuffix
// (or contains it when it ends in "/") and whose name matches nameRE.
func (r *Result) Find(pkgSuffix string, nameRE *regexp.Regexp) *Bench {
	for _, b := range r.Benches {
		if pkgMatch(b.Pkg, pkgSuffix) && nameRE.MatchString(b.Name) {
			return b
		}
	}
	return nil
}

func pkgMatch(pkg, want string) bool {
	if strings.HasSuffix(want, "/") {
		return strings.Contains(pkg+"/", "/"+want)
	}
	return pkg == want || strings.HasSuffix(pkg, "/"+want)
}

// pkgFailure returns why a package matching pkgSuffix failed as a whole.
func (r *Result) pkgFailure(pkgSuffix string) (string, bool) {
	for p, why := range r.PkgFail {
		if pkgMatch(p, pkgSuffix) {
			return why, true
		}
	}
	return "", false
}
