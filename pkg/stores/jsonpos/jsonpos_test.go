package jsonpos_test

import (
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

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"{\n  \"a\": [1,]\n}", "f:2:11: invalid character ']' looking for beginning of value"},
		{"[1, 2", "f:1:6: unexpected end of JSON input"},
		{"", "f:1:1: unexpected end of JSON input"},
		{"{} x", "f:1:4: invalid character 'x' after top-level value"},
	} {
		err := jsonpos.Check("f", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Check(%q) = %v, want %s", tc.doc, err, tc.want)
		}
	}
	if err := jsonpos.Check("f", []byte(`{"a": [1]}`)); err != nil {
		t.Fatal(err)
	}
}
