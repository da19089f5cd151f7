package claimcheck_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/queue/claimcheck"
)

// TestWithDefaults: a zero or negative Threshold is unset; a positive one
// and KeyPrefix are kept.
func TestWithDefaults(t *testing.T) {
	for in, want := range map[int]int{0: claimcheck.DefaultThreshold, -1: claimcheck.DefaultThreshold, 7: 7} {
		c := claimcheck.Config{Threshold: in, KeyPrefix: "claims/"}.WithDefaults()
		if c.Threshold != want || c.KeyPrefix != "claims/" {
			t.Errorf("Threshold %d: got %+v, want Threshold %d and the prefix kept", in, c, want)
		}
	}
}
