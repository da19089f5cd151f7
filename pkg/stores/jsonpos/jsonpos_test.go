package jsonpos_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\n\nx")
	for _, tc := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, {3, 2, 1}, {6, 3, 1}, {7, 4, 1}, {8, 4, 2}, {99, 4, 2}, {-1, 1, 1}} {
		l, c := jsonpos.Position(data, tc.off)
		if l != tc.line || c != tc.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}

// checkErrors checks that Check refuses each doc with the error want.
func checkErrors(t *testing.T, cases []struct{ doc, want string }) {
	t.Helper()
	for _, tc := range cases {
		err := jsonpos.Check("f", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Check(%q) = %v, want %s", tc.doc, err, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	checkErrors(t, []struct{ doc, want string }{
		{"{\n  \"a\": [1,]\n}", "f:2:10: trailing comma before ']'"},
		{"[1, 2", "f:1:6: unexpected end of JSON input"},
		{"", "f:1:1: unexpected end of JSON input"},
		{"{} x", "f:1:4: invalid character 'x' after top-level value"},
	})
	if err := jsonpos.Check("f", []byte(`{"a": [1]}`)); err != nil {
		t.Fatal(err)
	}
}

// A trailing comma is reported at the comma itself, not at the bracket
// after it, whatever whitespace lies between.
func TestCheckTrailingCommaPointsAtTheComma(t *testing.T) {
	checkErrors(t, []struct{ doc, want string }{
		{"[1,]", "f:1:3: trailing comma before ']'"},
		{"{\"a\": 1,\n}", "f:1:8: trailing comma before '}'"},
		{"{\n  \"a\": [\n    {\"b\": 1},\n  ],\n  \"c\": 2\n}", "f:3:13: trailing comma before ']'"},
		{"[1,\r\n\t ]", "f:1:3: trailing comma before ']'"},
	})
	// Not a trailing comma: a comma followed by a bad value keeps
	// encoding/json's message at the bad value.
	if err := jsonpos.Check("f", []byte("[1, x]")); err == nil || err.Error() != "f:1:5: invalid character 'x' looking for beginning of value" {
		t.Errorf("Check([1, x]) = %v", err)
	}
}

// Configuration files are UTF-8 without a byte order mark: encoding/json
// would silently turn a bad byte into U+FFFD.
func TestCheckRefusesInvalidUTF8AndBOM(t *testing.T) {
	checkErrors(t, []struct{ doc, want string }{
		{"\xef\xbb\xbf{}", "f:1:1: the file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without one"},
		{"{\"a\":\n \"caf\xe9\"}", "f:2:6: invalid UTF-8 (byte 0xe9); the file must be UTF-8"},
		{"[\"\xff\"]", "f:1:3: invalid UTF-8 (byte 0xff); the file must be UTF-8"},
	})
	if err := jsonpos.Check("f", []byte(`{"a": "café ✓"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestReadAllLimit(t *testing.T) {
	b, err := jsonpos.ReadAll("f", strings.NewReader("12345"), 5)
	if err != nil || string(b) != "12345" {
		t.Fatalf("ReadAll at the limit = %q, %v", b, err)
	}
	_, err = jsonpos.ReadAll("f", strings.NewReader("123456"), 5)
	if !errors.Is(err, jsonpos.ErrTooLarge) || err.Error() != "f: larger than the 5-byte limit for configuration files: file too large" {
		t.Fatalf("ReadAll over the limit = %v", err)
	}
}
