package bit_test

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// TestSampleRate: a store whose fixity target samples half its copies
// gets a BIT for about half of its items in a run — the same number the
// bit log records as listed and the BIT_REPORT expects — and a store
// without a sample rate gets one for every item. The next run samples
// other items.
func TestSampleRate(t *testing.T) {
	e := newEnv()
	e.reg.Accounts[0].Stores[0].Fixity = stores.Fixity{SampleRate: 0.5}
	sampled := func() (ids map[string]bool, other int, expected int64, recorded int64, runID string) {
		t.Helper()
		ids = map[string]bool{}
		for _, tk := range decodeAll(t, e.bits) {
			if tk.Get("storeId") == "1" && tk.Get("spaceId") == "photos" {
				ids[tk.Get("contentId")] = true
				runID = tk.Get("runId")
			} else if tk.Get("storeId") == "2" {
				other++
			}
		}
		for _, tk := range decodeAll(t, e.reports) {
			if tk.Get("storeId") == "1" && tk.Get("spaceId") == "photos" {
				n, err := strconv.ParseInt(tk.Get("expected"), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				expected = n
			}
		}
		rec, err := e.log.RunSpace(t.Context(), runID, "acme", "1", "photos")
		if err != nil {
			t.Fatal(err)
		}
		return ids, other, expected, rec.Expected, runID
	}
	if sum, err := e.loop(t, bit.Filter{}, 0).Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	first, other, expected, recorded, run1 := sampled()
	if n := len(first); n < 2100*4/10 || n > 2100*6/10 || int64(n) != expected || int64(n) != recorded {
		t.Fatalf("sample of 2100 at 0.5: %d BITs, report expects %d, bit log records %d", n, expected, recorded)
	}
	if other != 900 {
		t.Fatalf("store 2 (no sample rate): %d BITs, want all 900", other)
	}
	e.clk.Advance(25 * time.Hour)
	if sum, err := e.loop(t, bit.Filter{}, 0).Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	second, _, _, _, run2 := sampled()
	same := 0
	for id := range second {
		if first[id] {
			same++
		}
	}
	if run1 == run2 || len(second) == 0 || same == len(second) || same == 0 {
		t.Fatalf("runs %s and %s: %d and %d sampled, %d in both: want another sample", run1, run2, len(first), len(second), same)
	}
}

// TestSkipRecentNeverTrustsASample: a run of a store that samples its
// copies checked only its sample, so its SUCCESS says nothing of the rest
// of the space: --skip-recent never skips such a space. And a run with
// SkipCovered checks only the copies that are due, so SkipRecent cannot
// come with it.
func TestSkipRecentNeverTrustsASample(t *testing.T) {
	e := newEnv()
	e.open["acme/1"].spaces = map[string]int{"photos": 4}
	delete(e.open, "acme/2")
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	e.reg.Accounts[0].Stores[0].Fixity = stores.Fixity{SampleRate: 0.5}
	day := 24 * time.Hour
	rs := bitlog.RunSpace{RunID: "r-sample", Account: "acme", StoreID: "1", SpaceID: "photos", Expected: 2}
	if err := e.log.StartSpace(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	if err := e.log.FinishSpace(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	if err := e.log.PutReport(t.Context(), bitlog.Report{RunID: "r-sample", Account: "acme", StoreID: "1", SpaceID: "photos",
		Result: bitlog.ResultSuccess, Counts: bitlog.Counts{Total: 2, Success: 2}, CreatedAt: e.clk.Now().Add(-day)}); err != nil {
		t.Fatal(err)
	}
	p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open, Logger: slog.New(slog.DiscardHandler)}, SkipRecent: 60 * day, BitLog: e.log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, Clock: e.clk, Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	if n := e.reports.Len(); n != 1 {
		t.Fatalf("%d reports queued: the sampled space's recent SUCCESS was trusted", n)
	}
	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: e.log, SkipRecent: day,
		Coverage: &fixity.Source{Index: memcontentindex.New(), Verdicts: e.log}, SkipCovered: true}); err == nil {
		t.Error("SkipRecent with SkipCovered accepted")
	}
}
