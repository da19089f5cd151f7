package jsonpos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// FuzzCheck: Check accepts only valid JSON (it also refuses valid JSON
// that does not decode into Go values, such as numbers beyond float64), and
// every refusal is a *jsonpos.Error naming the file and a line and column inside
// the data (or just after its last byte).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,]}`, "{\n  \"a\": 1,\n}", `[`, ``, `"\ud800"`, "{\"a\":\x00}", `{"a":1}{}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jsonpos.Check("f.json", data)
		if err == nil && !json.Valid(data) {
			t.Fatalf("Check accepted invalid JSON %q", data)
		}
		if err == nil {
			return
		}
		var pe *jsonpos.Error
		if !errors.As(err, &pe) {
			t.Fatalf("Check(%q) = %v (%T), want a *jsonpos.Error", data, err, err)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		if pe.File != "f.json" || pe.Line < 1 || pe.Line > lines || pe.Col < 1 || pe.Col > len(data)+1 {
			t.Fatalf("Check(%q): position %s:%d:%d outside the data (%d lines)", data, pe.File, pe.Line, pe.Col, lines)
		}
	})
}
