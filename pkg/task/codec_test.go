package task

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fixedTime = time.Date(2024, 3, 5, 14, 7, 9, 0, time.UTC)

var testOpts = EncodeOptions{Now: func() time.Time { return fixedTime }}

// sqsSafe reports whether b holds only characters SQS accepts in a message
// body: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF.
func sqsSafe(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

func sameTask(a, b *Task) bool {
	return a.Type == b.Type && a.Attempts == b.Attempts && maps.Equal(a.Props, b.Props)
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"json", FormatJSON, false},
		{"properties", FormatProperties, false},
		{" JSON ", FormatJSON, false},
		{"Properties", FormatProperties, false},
		{"xml", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != strings.ToLower(strings.TrimSpace(tt.in)) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

func TestDecodeProperties(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		typ      Type
		attempts int
		props    map[string]string
	}{
		{
			name:  "java store output",
			in:    "#Tue Mar 05 14:07:09 UTC 2024\naccount=acme\ntype=DUP\nspaceId=photos\n",
			typ:   TypeDup,
			props: map[string]string{"account": "acme", "spaceId": "photos"},
		},
		{
			name:  "separators colon whitespace and spaced equals",
			in:    "type:BIT\na b\nc = d\ne\t:\tf\ng  h  \n",
			typ:   TypeBit,
			props: map[string]string{"a": "b", "c": "d", "e": "f", "g": "h  "},
		},
		{
			name:  "only one separator is dropped after whitespace",
			in:    "type=NOOP\nk = =v\nk2==v\nk3 :: v\n",
			typ:   TypeNoop,
			props: map[string]string{"k": "=v", "k2": "=v", "k3": ": v"},
		},
		{
			name:  "comments and blank lines",
			in:    "# comment\n! bang comment\n   # indented comment\n\n \t \ntype=BIT\n#type=DUP\n",
			typ:   TypeBit,
			props: map[string]string{},
		},
		{
			name:  "comment line ending in backslash does not continue",
			in:    "# comment \\\ntype=BIT\n",
			typ:   TypeBit,
			props: map[string]string{},
		},
		{
			name:  "continuation drops leading whitespace",
			in:    "type=AUDIT\nk=one \\\n    two\\\n\tthree\n",
			typ:   TypeAudit,
			props: map[string]string{"k": "one twothree"},
		},
		{
			name:  "continuation into a line starting with hash is content",
			in:    "type=AUDIT\nk=a\\\n  #b\n",
			typ:   TypeAudit,
			props: map[string]string{"k": "a#b"},
		},
		{
			name:  "even backslashes do not continue",
			in:    "type=AUDIT\nk=a\\\\\nj=b\n",
			typ:   TypeAudit,
			props: map[string]string{"k": `a\`, "j": "b"},
		},
		{
			name:  "empty continuation line ends the logical line",
			in:    "type=AUDIT\nk=a\\\n\nj=b\n",
			typ:   TypeAudit,
			props: map[string]string{"k": "a", "j": "b"},
		},
		{
			name:  "continuation at end of input",
			in:    "type=AUDIT\nk=a\\",
			typ:   TypeAudit,
			props: map[string]string{"k": "a"},
		},
		{
			name:  "CRLF and CR line ends",
			in:    "#c\r\ntype=BIT\r\nk=v\\\r\n  w\rj=x",
			typ:   TypeBit,
			props: map[string]string{"k": "vw", "j": "x"},
		},
		{
			name: "escapes",
			in: "type=AUDIT\n" +
				`key\ with\ spaces=v` + "\n" +
				`k\=1\:2=a\=b\:c\#d\!e\\f` + "\n" +
				`ctl=\t\n\r\f` + "\n" +
				`lead=\ \ x` + "\n" +
				`other=\q\"\'` + "\n",
			typ: TypeAudit,
			props: map[string]string{
				"key with spaces": "v", "k=1:2": `a=b:c#d!e\f`, "ctl": "\t\n\r\f",
				"lead": "  x", "other": `q"'`,
			},
		},
		{
			name:  "unicode escapes and raw UTF-8",
			in:    "type=AUDIT\n" + `u=\u00dc\u00FCn \ud83d\ude00 文件` + "\n" + "raw=Ünïcødé 文件 😀\n",
			typ:   TypeAudit,
			props: map[string]string{"u": "Üün 😀 文件", "raw": "Ünïcødé 文件 😀"},
		},
		{
			name:     "attempts and unknown type",
			in:       "type=STORAGE_STATS\nattempts=2\n",
			typ:      "STORAGE_STATS",
			attempts: 2,
			props:    map[string]string{},
		},
		{
			name:  "empty key and empty value",
			in:    "type=NOOP\n=v\nk=\nlonely\n",
			typ:   TypeNoop,
			props: map[string]string{"": "v", "k": "", "lonely": ""},
		},
		{
			name:  "last duplicate wins",
			in:    "type=BIT\ntype=DUP\nk=1\nk=2\n",
			typ:   TypeDup,
			props: map[string]string{"k": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := &Task{Type: tt.typ, Attempts: tt.attempts, Props: tt.props}
			if !sameTask(got, want) {
				t.Errorf("Decode =\n %#v\nwant\n %#v", got, want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		line    int
		wantMsg string
	}{
		{"properties missing type", "#x\naccount=a\n", 0, `missing property "type"`},
		{"properties empty type", "#x\ntype=\n", 2, `empty property "type"`},
		{"properties bad attempts", "type=DUP\nattempts=abc\n", 2, `"attempts": not a non-negative integer: "abc"`},
		{"properties negative attempts", "type=DUP\nattempts=-1\n", 2, "not a non-negative integer"},
		{"properties bad unicode escape", "type=DUP\n\nk=\\u12G4\n", 3, `property "k": malformed \uXXXX escape`},
		{"properties short unicode escape", "type=DUP\nk=ab\\u12", 2, `malformed \uXXXX escape "\\u12"`},
		{"properties bad escape in key", "type=DUP\nk\\u00=v", 2, "key: malformed"},
		{"properties lone high surrogate", "type=DUP\nk=\\ud83dx\n", 2, `unpaired surrogate \uD83D`},
		{"properties lone low surrogate", "type=DUP\nk=\\ude00\n", 2, `unpaired surrogate \uDE00`},
		{"properties error names first line of continued line", "type=DUP\nk=a\\\n b\\\n \\uZZZZ\n", 2, "malformed"},
		{"invalid UTF-8", "type=DUP\nk=\xff\n", 0, "invalid UTF-8"},
		{"json syntax", `{"v":1,`, 0, "json"},
		{"json missing version", `{"type":"DUP","props":{}}`, 0, `missing envelope version "v"`},
		{"json unknown version", `{"v":2,"type":"DUP","props":{}}`, 0, "unsupported envelope version 2"},
		{"json missing type", `{"v":1,"props":{}}`, 0, "missing task type"},
		{"json empty type", `{"v":1,"type":"","props":{}}`, 0, "missing task type"},
		{"json negative attempts", `{"v":1,"type":"DUP","attempts":-3}`, 0, "negative attempts -3"},
		{"json fractional attempts", `{"v":1,"type":"DUP","attempts":1.5}`, 0, "attempts"},
		{"json non-string prop", `{"v":1,"type":"DUP","props":{"a":1}}`, 0, "json"},
		{"json unknown field", `{"v":1,"type":"DUP","atempts":1}`, 0, `unknown field "atempts"`},
		{"json trailing data", `{"v":1,"type":"DUP"} {}`, 0, "after the envelope"},
		{"json reserved prop", `{"v":1,"type":"DUP","props":{"type":"BIT"}}`, 0, `property "type" is reserved`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode = %v, want error", got)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Line != tt.line {
				t.Errorf("Line = %d, want %d (%v)", de.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	got, err := Decode([]byte(" \n\t{\"v\":1,\"type\":\"FUTURE\",\"attempts\":2,\"props\":{\"a\":\"\\u00dc\",\"b\":\"x\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Task{Type: "FUTURE", Attempts: 2, Props: map[string]string{"a": "Ü", "b": "x"}}
	if !sameTask(got, want) || got.Type.Known() {
		t.Errorf("Decode = %#v, want %#v (unknown type)", got, want)
	}
	got, err = Decode([]byte(`{"v":1,"type":"NOOP"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Props == nil || got.Attempts != 0 {
		t.Errorf("Decode without props = %#v, want non-nil empty Props", got)
	}
}

func TestEncodeEscapesAndSQSSafety(t *testing.T) {
	tk := &Task{Type: TypeNoop, Attempts: 1, Props: map[string]string{
		"k ey": " lead and trail ",
		"ctl":  "a\x00b\x01c\x1fd\te\nf\rg\fh\x7fi",
		"nonc": "x\uFFFEy\uFFFFz",
		"sep":  "a=b:c#d!e\\f",
		"uni":  "dir/Ünïcødé 文件.txt 😀",
		"html": "<a&b>",
	}}
	props, err := testOpts.Encode(tk, FormatProperties)
	if err != nil {
		t.Fatal(err)
	}
	wantProps := "#Tue Mar 05 14:07:09 UTC 2024\n" +
		"attempts=1\n" +
		`ctl=a\u0000b\u0001c\u001Fd\te\nf\rg\fh` + "\x7f" + "i\n" +
		"html=<a&b>\n" +
		`k\ ey=\ lead and trail ` + "\n" +
		`nonc=x\uFFFEy\uFFFFz` + "\n" +
		`sep=a\=b\:c\#d\!e\\f` + "\n" +
		"type=NOOP\n" +
		"uni=dir/Ünïcødé 文件.txt 😀\n"
	if string(props) != wantProps {
		t.Errorf("properties =\n%s\nwant\n%s", props, wantProps)
	}
	js, err := Encode(tk, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"v":1,"type":"NOOP","attempts":1,"props":{"ctl":"a\u0000b\u0001c\u001fd\te\nf\rg\fh` + "\x7f" + `i","html":"<a&b>","k ey":" lead and trail ","nonc":"x\ufffey\uffffz","sep":"a=b:c#d!e\\f","uni":"dir/Ünïcødé 文件.txt 😀"}}`
	if string(js) != wantJSON {
		t.Errorf("json =\n%s\nwant\n%s", js, wantJSON)
	}
	for f, b := range map[Format][]byte{FormatJSON: js, FormatProperties: props} {
		if !sqsSafe(b) {
			t.Errorf("%v output is not SQS-safe: %q", f, b)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%v: Decode: %v", f, err)
		}
		if !sameTask(back, tk) {
			t.Errorf("%v: round trip = %#v, want %#v", f, back, tk)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		t    *Task
		want string
	}{
		{"nil", nil, "nil task"},
		{"empty type", &Task{}, "empty task type"},
		{"invalid type", &Task{Type: "\xff"}, "invalid UTF-8"},
		{"negative attempts", &Task{Type: TypeDup, Attempts: -1}, "negative attempts"},
		{"invalid value", New(TypeDup, map[string]string{"k": "a\xc3"}), `property "k": invalid UTF-8`},
		{"invalid key", New(TypeDup, map[string]string{"\xc3": "v"}), "invalid UTF-8"},
		{"reserved type", New(TypeDup, map[string]string{KeyType: "x"}), `property "type" is reserved`},
		{"reserved attempts", New(TypeDup, map[string]string{KeyAttempts: "1"}), `property "attempts" is reserved`},
	}
	for _, tt := range tests {
		for _, f := range []Format{FormatJSON, FormatProperties} {
			if _, err := Encode(tt.t, f); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: Encode(%v) error = %v, want it to contain %q", tt.name, f, err, tt.want)
			}
		}
	}
	if _, err := Encode(&Task{Type: TypeNoop}, Format(7)); err == nil {
		t.Error("Encode with unknown format: want error")
	}
}

func TestEncodePropertiesOmitsZeroAttemptsAndUsesClock(t *testing.T) {
	b, err := Encode(New(TypeNoop, nil), FormatProperties)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) != 3 || lines[1] != "type=NOOP" || lines[2] != "" {
		t.Fatalf("Encode = %q, want a date line then type=NOOP", b)
	}
	if _, err := time.Parse(javaDateLayout, strings.TrimPrefix(lines[0], "#")); err != nil {
		t.Errorf("date comment %q: %v", lines[0], err)
	}
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{`{"v":1}`, FormatJSON},
		{"\r\n \f\t{", FormatJSON},
		{"#{", FormatProperties},
		{"type={", FormatProperties},
		{"", FormatProperties},
	}
	for _, tt := range tests {
		if got := DetectFormat([]byte(tt.in)); got != tt.want {
			t.Errorf("DetectFormat(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
