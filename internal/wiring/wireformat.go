package wiring

import (
	"flag"
	"fmt"

	"github.com/millfleet/mill/pkg/task"
)

// WireFormatFlagName is the flag (and, through envflag, MILL_WIRE_FORMAT)
// every Mill binary that sends tasks reads its wire format from, so a
// mixed deployment sets it once for all of them.
const WireFormatFlagName = "wire-format"

// wireFormatUsage is --wire-format's help text.
const wireFormatUsage = "wire `format` of the tasks this binary sends: json (Mill's envelope) or properties (the Java\n" +
	".properties text DuraCloud writes). Mill reads both whatever this says. Set properties while a Java\n" +
	"worker, producer or DuraStore still reads a queue Mill writes to (a mixed deployment), for every\n" +
	"Mill binary at once through MILL_WIRE_FORMAT=properties; json once only Mill reads them"

// WireFormat is --wire-format as given; Parse reads it (after fs is
// parsed, so a command can report it with its other problems).
type WireFormat struct{ name string }

// WireFormatFlag defines --wire-format on fs (default json).
func WireFormatFlag(fs *flag.FlagSet) *WireFormat {
	w := &WireFormat{}
	fs.StringVar(&w.name, WireFormatFlagName, task.FormatJSON.String(), wireFormatUsage)
	return w
}

// Parse returns the format, or an error naming the flag.
func (w *WireFormat) Parse() (task.Format, error) {
	f, err := task.ParseFormat(w.name)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", WireFormatFlagName, err)
	}
	return f, nil
}
