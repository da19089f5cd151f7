package bitlog_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/bitlog"
)

// FuzzDecodeToken: a page token from a client either decodes (and then
// re-encodes to a token naming the same key) or fails with ErrBadPageToken;
// any key survives EncodeToken → DecodeToken.
func FuzzDecodeToken(f *testing.F) {
	f.Add(bitlog.EncodeToken(bitlog.PageKey{RunID: "r", Account: "a", StoreID: "s", SpaceID: "sp", ContentID: "c/d"}), "x")
	f.Add("", "")
	f.Add("!!", "\xff")
	f.Add("WyIiXQ", "a\x00b") // ["""] : a short array
	f.Fuzz(func(t *testing.T, tok, content string) {
		k, ok, err := bitlog.DecodeToken(tok)
		switch {
		case err != nil:
			if !errors.Is(err, bitlog.ErrBadPageToken) {
				t.Fatalf("DecodeToken(%q): %v does not wrap ErrBadPageToken", tok, err)
			}
		case ok:
			k2, ok2, err2 := bitlog.DecodeToken(bitlog.EncodeToken(k))
			if err2 != nil || !ok2 || k2 != k {
				t.Fatalf("re-encoding %+v from %q: %+v %v %v", k, tok, k2, ok2, err2)
			}
		case tok != "":
			t.Fatalf("DecodeToken(%q) = not ok without an error", tok)
		}
		want := bitlog.PageKey{RunID: "run", Account: content, StoreID: "s", SpaceID: "sp", ContentID: content}
		got, ok, err := bitlog.DecodeToken(bitlog.EncodeToken(want))
		if err != nil || !ok {
			t.Fatalf("DecodeToken(EncodeToken(%+v)): %v %v", want, ok, err)
		}
		// JSON replaces invalid UTF-8 with U+FFFD; keys come from valid text.
		if got != want && utf8.ValidString(content) {
			t.Fatalf("round trip of %+v: %+v", want, got)
		}
	})
}
