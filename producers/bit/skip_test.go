package bit_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
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
// a trusted SUCCESS of 12 days ago — of a run the producer recorded for
// the space, covering every item it listed — is left out with the reason
// in the summary. Every other space is checked: a report 70 days old, a
// FAILURE, no report, and SUCCESS reports that are not trusted: of a run
// the producer never recorded (a forged run, or a report made before the
// record existed), of a run recorded for another space only, of a listing
// that never finished, covering fewer items than were listed; and an
// empty space, whose report is EMPTY.
func skipScenario(t *testing.T, log bitlog.Log) {
	e := newEnv()
	e.open["acme/1"].spaces = map[string]int{"recent": 3, "old": 2, "failed": 2, "never": 1, "forged": 2,
		"elsewhere": 2, "unfinished": 2, "partial": 3, "empty": 0}
	delete(e.open, "acme/2")
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	now := e.clk.Now()
	day := 24 * time.Hour
	put := func(run, space string, res bitlog.Result, total int64, age time.Duration) {
		t.Helper()
		err := log.PutReport(t.Context(), bitlog.Report{RunID: run, Account: "acme", StoreID: "1", SpaceID: space,
			Result: res, Counts: bitlog.Counts{Total: total, Success: total}, CreatedAt: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
	}
	listed := func(run, space string, n int64, done bool) {
		t.Helper()
		s := bitlog.RunSpace{RunID: run, Account: "acme", StoreID: "1", SpaceID: space, Expected: n}
		err := log.StartSpace(t.Context(), s)
		if done && err == nil {
			err = log.FinishSpace(t.Context(), s)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	put("r-old", "recent", bitlog.ResultFailure, 3, 40*day)
	listed("r-recent", "recent", 3, true)
	put("r-recent", "recent", bitlog.ResultSuccess, 3, 12*day)
	listed("r-old", "old", 2, true)
	put("r-old", "old", bitlog.ResultSuccess, 2, 70*day)
	listed("r-failed", "failed", 2, true)
	put("r-failed", "failed", bitlog.ResultFailure, 2, 5*day)
	put("r-forged", "forged", bitlog.ResultSuccess, 2, 1*day)
	listed("r-elsewhere", "recent", 2, true)
	put("r-elsewhere", "elsewhere", bitlog.ResultSuccess, 2, 1*day)
	listed("r-unfinished", "unfinished", 0, false)
	put("r-unfinished", "unfinished", bitlog.ResultSuccess, 2, 1*day)
	listed("r-partial", "partial", 3, true)
	put("r-partial", "partial", bitlog.ResultSuccess, 1, 1*day)
	listed("r-empty", "empty", 0, true)
	put("r-empty", "empty", bitlog.ResultEmpty, 0, 1*day)
	p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open, Logger: slog.New(slog.DiscardHandler)}, SkipRecent: 60 * day, BitLog: log})
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
	var checked []string
	for _, tk := range decodeAll(t, e.reports) {
		checked = append(checked, tk.Get("spaceId"))
	}
	slices.Sort(checked)
	want := []string{"elsewhere", "empty", "failed", "forged", "never", "old", "partial", "unfinished"}
	if !slices.Equal(checked, want) {
		t.Errorf("reports queued for %v, want %v (every space but recent)", checked, want)
	}
	if e.bits.Len() != 14 {
		t.Errorf("%d BIT tasks, want 14 (every item but recent's 3)", e.bits.Len())
	}
	var b strings.Builder
	_ = sum.Write(&b)
	for _, want := range []string{"9/9 morsels done (1 skipped)",
		"acme/1/recent: the latest report (run r-recent, SUCCESS, 3 of 3 listed items, 2026-04-19T03:00:00Z) is 12d old, under the skip age of 60d"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, SkipRecent: day}); err == nil {
		t.Error("a producer without a bit log accepted")
	}
}

func TestSkipRecent(t *testing.T) {
	skipScenario(t, membitlog.New(nil))
}

// TestSkipRecentPostgreSQL reads the reports from the bit_report table.
func TestSkipRecentPostgreSQL(t *testing.T) {
	pool := testenv.Pool(t)
	if _, err := milldb.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	skipScenario(t, pgbitlog.New(pool))
}
