package bitreport_test

import (
	"slices"
	"testing"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestRechecksNotIdentity: a re-queued report counts as the task it
// continues in its run's record (pkg/runs).
func TestRechecksNotIdentity(t *testing.T) {
	if !slices.Contains(runs.IgnoredProps, bitreport.KeyRechecks) {
		t.Fatalf("runs.IgnoredProps %v lacks %q", runs.IgnoredProps, bitreport.KeyRechecks)
	}
}
