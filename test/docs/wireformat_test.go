package docs

import (
	"slices"
	"strings"
	"testing"
)

// TestOneWireFormat: every binary that sends tasks reads its wire format
// from the one --wire-format (MILL_WIRE_FORMAT), so a mixed deployment
// sets it once; no binary has another flag for it.
func TestOneWireFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary")
	}
	byBinary := collect(t)
	senders := []string{"workman", "bitproducer", "dupproducer", "statsproducer",
		"millctl content put", "millctl content rm", "millctl content props set", "millctl content restore",
		"millctl dev load", "millctl enqueue"}
	have := map[string]bool{}
	for bin, opts := range byBinary {
		for _, o := range opts {
			if o.Flag == "--wire-format" {
				if o.Var != "MILL_WIRE_FORMAT" || o.Default != "json" || !strings.Contains(o.Usage, "mixed deployment") {
					t.Errorf("%s: --wire-format is %+v", bin, o)
				}
				for _, c := range o.Commands {
					have[c] = true
				}
				continue
			}
			// Another flag choosing a task format would have to be set
			// apart (evidence events' --format is of an export file).
			if strings.HasSuffix(o.Flag, "format") && !slices.Equal(o.Commands, []string{"millctl evidence events"}) {
				t.Errorf("%s: %s (%s) %v: a second wire-format flag?", bin, o.Flag, o.Var, o.Commands)
			}
		}
	}
	for _, s := range senders {
		if !have[s] {
			t.Errorf("%s has no --wire-format (has: %v)", s, have)
		}
	}
}
