package migrate_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/migrate"
)

// The CSV lists every item with its outcome; an ID a spreadsheet would
// run as a formula is written inert. The JSON report counts per outcome
// and space and lists the items not migrated.
func TestReports(t *testing.T) {
	var buf bytes.Buffer
	w, err := migrate.NewCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	s := migrate.NewSummary(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, it := range []migrate.Item{
		{Space: "s", ContentID: "a", Outcome: migrate.Copied, Size: 3, MD5: md5a, CRC64NVME: "AAAAAAAAAAA="},
		{Space: "s", ContentID: "=HYPERLINK(1)", Outcome: migrate.Corrupt, Size: 1, MD5: md5b, Detail: "bytes differ"},
		{Space: "t", ContentID: "b", Outcome: migrate.Skipped, Size: 2},
	} {
		s.Add(it)
		if err := w.Write(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || !slices.Equal(rows[0], migrate.CSVHeader) || rows[2][1] != "'=HYPERLINK(1)" || rows[2][2] != "corrupt" || rows[1][5] != "AAAAAAAAAAA=" {
		t.Errorf("CSV rows %q", rows)
	}
	s.Finished = s.Started.Add(time.Second)
	rep := migrate.Report{Account: "acme", From: "dura", To: "1", Summary: s}
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items    map[string]int
		Spaces   map[string]map[string]int
		Problems []migrate.Item
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Items["copied"] != 1 || got.Items["corrupt"] != 1 || got.Items["skipped"] != 1 || got.Spaces["t"]["skipped"] != 1 ||
		len(got.Problems) != 1 || got.Problems[0].ContentID != "=HYPERLINK(1)" {
		t.Errorf("JSON report %s", b)
	}
	var text strings.Builder
	rep.Text(&text)
	if !strings.Contains(text.String(), "space s: 1 copied, 1 corrupt") || !strings.Contains(text.String(), `corrupt s/"=HYPERLINK(1)": bytes differ`) {
		t.Errorf("summary:\n%s", text.String())
	}
}
