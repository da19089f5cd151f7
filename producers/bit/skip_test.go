package bit_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"60d": 60 * 24 * time.Hour, "0d": 0, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := bit.ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "-1d", "1w", "60 d", "-5h"} {
		if _, err := bit.ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
	if got := bit.FormatAge(60 * 24 * time.Hour); got != "60d" {
		t.Errorf("FormatAge(60d) = %q", got)
	}
}

// skipScenario: with a skip age of 60 days, a space whose latest report is
// a SUCCESS of 12 days ago is left out with the reason in the summary; one
// whose latest report is 70 days old, or FAILURE, or that has none, is
// checked.
func skipScenario(t *testing.T, reports bitlog.Log) {
	e := newEnv()
	e.open["acme/1"].spaces = map[string]int{"recent": 3, "old": 2, "failed": 2, "never": 1}
	delete(e.open, "acme/2")
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	now := e.clk.Now()
	put := func(run, space string, res bitlog.Result, age time.Duration) {
		t.Helper()
		err := reports.PutReport(t.Context(), bitlog.Report{RunID: run, Account: "acme", StoreID: "1", SpaceID: space,
			Result: res, Counts: bitlog.Counts{Total: 1, Success: 1}, CreatedAt: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
	}
	day := 24 * time.Hour
	put("r-old", "recent", bitlog.ResultFailure, 40*day)
	put("r-recent", "recent", bitlog.ResultSuccess, 12*day)
	put("r-old", "old", bitlog.ResultSuccess, 70*day)
	put("r-failed", "failed", bitlog.ResultFailure, 5*day)
	p, err := bit.New(bit.Config{Registry: e.reg, Opener: e.open, SkipRecent: 60 * day, Reports: reports,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, Clock: e.clk, Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	checked := map[string]bool{}
	for _, tk := range decodeAll(t, e.reports) {
		checked[tk.Get("spaceId")] = true
	}
	if len(checked) != 3 || checked["recent"] || !checked["old"] || !checked["failed"] || !checked["never"] {
		t.Errorf("reports queued for %v, want old, failed and never", checked)
	}
	if e.bits.Len() != 5 {
		t.Errorf("%d BIT tasks, want 5 (old 2, failed 2, never 1)", e.bits.Len())
	}
	var b strings.Builder
	_ = sum.Write(&b)
	for _, want := range []string{"4/4 morsels done (1 skipped)",
		"acme/1/recent: the latest report (run r-recent, SUCCESS, 2026-04-19T03:00:00Z) is 12d old, under the skip age of 60d"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := bit.New(bit.Config{Registry: e.reg, Opener: e.open, SkipRecent: day}); err == nil {
		t.Error("SkipRecent without Reports accepted")
	}
}

func TestSkipRecent(t *testing.T) { skipScenario(t, bitlog.NewMemory(nil)) }

// TestSkipRecentPostgreSQL reads the reports from the bit_report table.
func TestSkipRecentPostgreSQL(t *testing.T) {
	pool := testenv.Pool(t)
	if _, err := milldb.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	skipScenario(t, milldb.NewBitLog(pool))
}
