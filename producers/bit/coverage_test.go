package bit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// verdictList is a bitlog.Verdicts over fixed verdicts of one store's
// spaces, by space, each sorted by content id.
type verdictList map[string][]bitlog.Verdict

func (v verdictList) Verdicts(_ context.Context, _, _, spaceID, after string, limit int) ([]bitlog.Verdict, bool, error) {
	var out []bitlog.Verdict
	for _, x := range v[spaceID] {
		if x.ContentID > after {
			if len(out) == bitlog.PageSize(limit) {
				return out, true, nil
			}
			out = append(out, x)
		}
	}
	return out, false, nil
}

// coverageEnv: store acme/1 with four spaces — "a" every copy verified
// 10 days ago, "b" one copy 100 days ago (10 days overdue), "c" one copy
// never verified, "d" every copy 200 days ago (110 days overdue) — in the
// content index and the verdicts.
func coverageEnv(t *testing.T) (*env, *fixity.Source) {
	t.Helper()
	e := newEnv()
	e.open["acme/1"].spaces = map[string]int{"a": 3, "b": 2, "c": 2, "d": 2}
	delete(e.open, "acme/2")
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	now, day := e.clk.Now(), 24*time.Hour
	idx := memcontentindex.New()
	vs := verdictList{}
	verdict := func(space string, i int, age time.Duration) {
		vs[space] = append(vs[space], bitlog.Verdict{ContentID: itemID(i), Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-age)})
	}
	for space, n := range e.open["acme/1"].spaces {
		for i := range n {
			if _, err := idx.Upsert(t.Context(), contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: space, ContentID: itemID(i)},
				Modified: now.Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		verdict("a", i, 10*day)
	}
	verdict("b", 0, 10*day)
	verdict("b", 1, 100*day)
	verdict("c", 0, 10*day)
	verdict("d", 0, 200*day)
	verdict("d", 1, 200*day)
	return e, &fixity.Source{Index: idx, Verdicts: vs, Clock: e.clk}
}

func runCoverage(t *testing.T, e *env, cfg bit.Config) (looping.Summary, string) {
	t.Helper()
	var logs bytes.Buffer
	cfg.Registry, cfg.Opener, cfg.BitLog = e.reg, e.open, e.log
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	p, err := bit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, Clock: e.clk, BiteSize: 1, Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	return sum, logs.String()
}

// spacesInOrder lists the spaces of the BIT tasks queued, each once, in
// the order of their first task, and counts the tasks (it drains the
// queues).
func spacesInOrder(t *testing.T, e *env) (spaces []string, bits, reports int) {
	bt := decodeAll(t, e.bits)
	for _, tk := range bt {
		if s := tk.Get("spaceId"); !slices.Contains(spaces, s) {
			spaces = append(spaces, s)
		}
	}
	return spaces, len(bt), len(decodeAll(t, e.reports))
}

// TestCoverageOrdersMostOverdueFirst: with coverage, the never-verified
// space is checked first, then the most overdue, and the space within
// target last; the store's figures are logged for the metric.
func TestCoverageOrdersMostOverdueFirst(t *testing.T) {
	e, src := coverageEnv(t)
	_, logs := runCoverage(t, e, bit.Config{Coverage: src})
	if got, bits, reps := spacesInOrder(t, e); !slices.Equal(got, []string{"c", "d", "b", "a"}) || bits != 9 || reps != 4 {
		t.Errorf("spaces checked in the order %v (%d BITs, %d reports), want [c d b a] (9, 4)", got, bits, reps)
	}
	var line map[string]any
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, fixity.LogMessage) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line["account"] != "acme" || line["store_id"] != "1" || line["copies"] != 9.0 || line["overdue"] != 4.0 ||
		line["within"] != 5.0 || line["never_verified"] != 1.0 || line["oldest_age_seconds"] != 200*86400.0 {
		t.Errorf("coverage log line %v\nlogs:\n%s", line, logs)
	}

	// Without coverage: the registry's order, as before.
	e, _ = coverageEnv(t)
	runCoverage(t, e, bit.Config{})
	if got, _, _ := spacesInOrder(t, e); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("without coverage: order %v", got)
	}
}

// TestSkipCovered: a space whose every copy stays within target for the
// margin is left out with the reason; with a margin it does not last, or
// without SkipCovered, it is checked. SkipRecent still applies alongside.
func TestSkipCovered(t *testing.T) {
	day := 24 * time.Hour
	e, src := coverageEnv(t)
	sum, _ := runCoverage(t, e, bit.Config{Coverage: src, SkipCovered: true, CoveredMargin: 30 * day})
	if got, bits, reps := spacesInOrder(t, e); !slices.Equal(got, []string{"c", "d", "b"}) || bits != 6 || reps != 3 {
		t.Errorf("checked %v (%d BITs, %d reports), want [c d b] (6, 3)", got, bits, reps)
	}
	var b strings.Builder
	_ = sum.Write(&b)
	want := "acme/1/a: every copy (3) is within its fixity target for at least 30d more; the first falls due at 2026-07-20T03:00:00Z"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}

	e, src = coverageEnv(t)
	runCoverage(t, e, bit.Config{Coverage: src, SkipCovered: true, CoveredMargin: 81 * day})
	if got, _, _ := spacesInOrder(t, e); len(got) != 4 {
		t.Errorf("a margin of 81 days (a falls due in 80): checked %v, want all four", got)
	}

	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: e.log, SkipCovered: true}); err == nil {
		t.Error("SkipCovered without Coverage accepted")
	}
	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: e.log, Coverage: src, CoveredMargin: -day}); err == nil {
		t.Error("a negative margin accepted")
	}
}
