package paging

import (
	"errors"
	"strings"
	"testing"
)

func TestTokenRoundTrip(t *testing.T) {
	pos := [3]string{"run/1", "a\x00b", "ü"}
	tok, err := EncodeToken(pos)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(tok, "+/=") {
		t.Errorf("token %q is not URL-safe base64 without padding", tok)
	}
	var got [3]string
	if err := DecodeToken(tok, &got); err != nil || got != pos {
		t.Fatalf("DecodeToken(%q) = %q, %v; want %q", tok, got, err, pos)
	}
}

func TestDecodeTokenRefusesWhatItDidNotMake(t *testing.T) {
	var pos [2]string
	for _, tok := range []string{"", "!!not base64", "bm90IGpzb24", "eyJhIjoxfQ" /* {"a":1} */} {
		err := DecodeToken(tok, &pos)
		if !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "bad page token") {
			t.Errorf("DecodeToken(%q) = %v, want ErrBadToken", tok, err)
		}
	}
}
