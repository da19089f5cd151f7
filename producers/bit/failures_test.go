package bit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// TestBrokenStoreIsolated: a store that cannot be opened (its credentials
// profile is missing) is a failed morsel: the other store's spaces are
// checked and reported, the failure is in the summary, and the next run
// tries the store again and checks it once it opens.
func TestBrokenStoreIsolated(t *testing.T) {
	e := newEnv()
	store2 := e.open["acme/2"]
	delete(e.open, "acme/2")
	l := e.loop(t, bit.Filter{}, 100000)
	sum, err := l.Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run without store 2: %v %v; want it done", sum, err)
	}
	if len(sum.Failed) != 1 || sum.Failed[0].ID != "acme/2/(store)" || !strings.Contains(sum.Failed[0].Reason, "unknown store acme/2") ||
		!sum.HasFailures() {
		t.Fatalf("failed %+v, want store 2", sum.Failed)
	}
	reported := map[string]bool{}
	for _, tk := range decodeAll(t, e.reports) {
		reported[tk.Get(task.KeyStoreID)+"/"+tk.Get(task.KeySpaceID)] = true
	}
	if !reported["1/photos"] || !reported["1/empty"] || reported["2/photos"] {
		t.Errorf("reports queued for %v, want store 1's spaces", reported)
	}
	if n := len(decodeAll(t, e.bits)); n != 2100+5 {
		t.Errorf("%d BITs, want store 1's 2105", n)
	}

	e.open["acme/2"] = store2
	e.clk.Advance(25 * time.Hour)
	sum, err = l.Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 0 {
		t.Fatalf("next run: %v %v (failed %+v)", sum, err, sum.Failed)
	}
	reported = map[string]bool{}
	for _, tk := range decodeAll(t, e.reports) {
		reported[tk.Get(task.KeyStoreID)+"/"+tk.Get(task.KeySpaceID)] = true
	}
	if !reported["2/photos"] {
		t.Errorf("next run: reports for %v, want store 2's photos", reported)
	}
}
