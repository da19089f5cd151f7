package console_test

import (
	"testing"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/processors/bit"
)

// TestRepairedRecognisesMillsOwnDetails: the "repaired" filter finds the
// rows the bit-error processor and the re-check after it write, in the
// form they write them (bit.RecheckNote, the processor's "resolution: case
// N: repaired from store S"), and nothing else.
func TestRepairedRecognisesMillsOwnDetails(t *testing.T) {
	for details, want := range map[string]bool{
		"case 2: content checksum differs; resolution: case 2: repaired from store 2; re-check queued": true,
		"case 1: ok" + bit.RecheckNote("case 2: repaired from store 2"):                                true,
		"case 1: ok" + bit.RecheckNote("case 8: repaired from store x-1"):                              true,
		"case 1: ok" + bit.RecheckNote("case 6: audit log re-synced from storage"):                     false,
		"case 3: external: needs the storage provider":                                                 false,
		"case 1: ok" + bit.RecheckNote("repaired from store 2 (forged)"):                               false,
		"case 1: ok": false,
	} {
		if got := console.Repaired(bitlog.Row{Details: details}); got != want {
			t.Errorf("Repaired(%q) = %v, want %v", details, got, want)
		}
	}
}
