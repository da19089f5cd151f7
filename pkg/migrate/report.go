package migrate

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CSVHeader is the first row of a migration's CSV report.
var CSVHeader = []string{"space", "contentId", "outcome", "size", "md5", "crc64nvme", "detail"}

// CSV writes a migration's CSV report, one row per item as it is
// recorded.
type CSV struct{ w *csv.Writer }

// NewCSV starts a CSV report on w with its header.
func NewCSV(w io.Writer) (*CSV, error) {
	c := &CSV{w: csv.NewWriter(w)}
	return c, c.w.Write(CSVHeader)
}

// Write writes one item's row. Cells that a spreadsheet would run as a
// formula are quoted with a leading apostrophe (an ID is the item's, not
// Mill's).
func (c *CSV) Write(it Item) error {
	row := []string{it.Space, it.ContentID, string(it.Outcome), strconv.FormatInt(it.Size, 10), it.MD5, it.CRC64NVME, it.Detail}
	for i, v := range row {
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			row[i] = "'" + v
		}
	}
	return c.w.Write(row)
}

// Flush flushes the rows written and returns the first error.
func (c *CSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// Report is a migration's JSON report.
type Report struct {
	Account string `json:"account"`
	From    string `json:"from"`
	To      string `json:"to"`
	// CSV is the location of the CSV report of every item.
	CSV string `json:"csv,omitempty"`
	*Summary
	// Error is why the migration stopped before its last space, if it did.
	Error string `json:"error,omitempty"`
}

// JSON encodes r.
func (r Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// TextProblems is how many items not copied or skipped Text lists.
const TextProblems = 50

// Text writes r's summary for a person: the counts per outcome and per
// space, then the first TextProblems items not copied or skipped.
func (r Report) Text(w io.Writer) {
	fmt.Fprintf(w, "migration of account %s, store %s to store %s: %s\n", r.Account, r.From, r.To, r.Finished.Sub(r.Started).Round(1e6))
	for _, o := range Outcomes {
		fmt.Fprintf(w, "  %-8s %6d items %14d bytes\n", o, r.Items[o], r.Bytes[o])
	}
	for _, s := range r.spaceNames() {
		var parts []string
		for _, o := range Outcomes {
			if n := r.Spaces[s][o]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, o))
			}
		}
		fmt.Fprintf(w, "  space %s: %s\n", s, strings.Join(parts, ", "))
	}
	for i, it := range r.Problems {
		if i == TextProblems {
			fmt.Fprintf(w, "  … and %d more (see the report)\n", len(r.Problems)-i)
			break
		}
		fmt.Fprintf(w, "  %s %s/%q: %s\n", it.Outcome, it.Space, it.ContentID, it.Detail)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  stopped: %s\n", r.Error)
	}
}
