package looping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/producers/looping"
)

// TestStateBytesProportionalToChange: a run of n morsels saved after each
// of 3,000 bites that change one morsel each writes about the same bytes
// per changed morsel at 2,000 and at 20,000 morsels. The journal's entry
// cap grows with the base: a fixed cap rewrote the whole base every 1,000
// saves, so the bytes per change grew with the state (the dupproducer's
// 20,000-space run wrote 4× the bytes per change of a 2,000-space one).
func TestStateBytesProportionalToChange(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 morsels")
	}
	perChange := map[int]float64{}
	for _, n := range []int{2000, 20000} {
		ctx := context.Background()
		s := looping.NewMemoryStore()
		start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		st := &looping.State{Version: looping.StateVersion, Kind: "dupproducer", RunFields: looping.RunFields{RunID: "20260601T000000Z",
			CurrentRunStart: start, NextRunStart: start.Add(7 * 24 * time.Hour), Invocations: 1}}
		for i := range n {
			st.Morsels = append(st.Morsels, looping.Morsel{ID: fmt.Sprintf("acct%03d/space-%05d/1→2", i%250, i),
				Data: json.RawMessage(fmt.Sprintf(`{"space":"space-%05d","src":"1","dest":"2"}`, i))})
		}
		if err := s.Save(ctx, st); err != nil {
			t.Fatal(err)
		}
		first, _ := looping.Written(s)
		const saves = 3000
		for k := range saves {
			m := &st.Morsels[(k*7919)%n]
			m.Marker = fmt.Sprintf("photos/%06d.jpg", k)
			m.Queued++
			if err := s.Save(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		total, _ := looping.Written(s)
		perChange[n] = float64(total-first) / saves
		t.Logf("%d morsels: base %d bytes, %.0f bytes per changed morsel over %d saves", n, first, perChange[n], saves)
	}
	if r := perChange[20000] / perChange[2000]; r > 2 || r < 0.5 {
		t.Errorf("bytes per changed morsel: %.0f at 20,000 morsels, %.0f at 2,000 (×%.2f); want about the same",
			perChange[20000], perChange[2000], r)
	}
}
