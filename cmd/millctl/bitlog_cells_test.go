package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/clock"
)

// TestBitlogTablesEncodeCells: the values of bit-log rows and reports
// that a message or a store could have chosen are printed through the
// shared cell encoder: no formula start, no raw bidi, line-separator or
// control character (an escape sequence for the terminal among them).
func TestBitlogTablesEncodeCells(t *testing.T) {
	at := time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC)
	l := membitlog.New(clock.NewFake(at))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Record(t.Context(), bitlog.Row{RunID: "r1", Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "sp\u202eace",
		ContentID: "=cmd|' /C calc'!A0", Result: bitlog.ResultFailure, Case: 2,
		Details: "@SUM(1)\u2028\x1b[2Jcleared \u2066x\u2069", CheckedAt: at}))
	must(l.PutReport(t.Context(), bitlog.Report{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "sp\u202eace",
		Result: bitlog.ResultFailure, Counts: bitlog.Counts{Total: 1, Failure: 1}, Location: "-loc", CreatedAt: at}))

	var out bytes.Buffer
	a := &app{stdout: &out}
	must(printResults(t.Context(), a, l, &bitlogFilter{limit: 0, json: false}, bitlog.Filter{RunID: "r1"}))
	reps, err := l.Reports(t.Context(), bitlog.ReportFilter{RunID: "r1"})
	must(err)
	must(printReports(a, reps, false))
	s := out.String()
	for _, want := range []string{`sp\u202eace`, `'@SUM(1)\u2028\u001b[2Jcleared \u2066x\u2069`, `"=cmd|' /C calc'!A0"`, `'-loc`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if i := strings.IndexAny(s, "\u202e\u2028\u2066\u2069\x1b"); i >= 0 {
		t.Errorf("output holds a raw bidi, separator or control character at byte %d:\n%q", i, s)
	}
}
