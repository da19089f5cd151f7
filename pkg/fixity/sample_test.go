package fixity_test

import (
	"fmt"
	"testing"

	"github.com/millfleet/mill/pkg/fixity"
)

// TestSampled: rate 1 takes every copy, 0 none; a rate takes about its
// share, the same copies when asked again, others in another run.
func TestSampled(t *testing.T) {
	sp := fixity.Space{Account: "a", StoreID: "1", SpaceID: "s"}
	n, again, other := 0, 0, 0
	for i := range 10000 {
		id := fmt.Sprintf("item-%d", i)
		if !fixity.Sampled("r1", sp, id, 1) || fixity.Sampled("r1", sp, id, 0) {
			t.Fatalf("%s: rate 1 or 0 not honoured", id)
		}
		if fixity.Sampled("r1", sp, id, 0.25) {
			n++
			if fixity.Sampled("r1", sp, id, 0.25) {
				again++
			}
			if fixity.Sampled("r2", sp, id, 0.25) {
				other++
			}
		}
	}
	if n < 2300 || n > 2700 || again != n || other > n/2 {
		t.Fatalf("rate 0.25 of 10000: %d taken, %d again, %d also in another run", n, again, other)
	}
}
