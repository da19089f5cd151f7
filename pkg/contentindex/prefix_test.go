package contentindex_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/contentindex"
)

// TestPrefixEnd: the end bounds exactly the strings with the prefix.
func TestPrefixEnd(t *testing.T) {
	for _, p := range []string{"a", "2026/", "é", "a\U0010FFFF", "\uD7FF", "x\u007f"} {
		end, ok := contentindex.PrefixEnd(p)
		if !ok {
			t.Fatalf("PrefixEnd(%q): none", p)
		}
		for _, in := range []string{p, p + "\x00", p + "zzz", p + "\U0010FFFF\U0010FFFF"} {
			if !(in >= p && in < end) {
				t.Errorf("PrefixEnd(%q) = %q does not bound %q", p, end, in)
			}
		}
		if strings.HasPrefix(end, p) {
			t.Errorf("PrefixEnd(%q) = %q starts with the prefix", p, end)
		}
	}
	if _, ok := contentindex.PrefixEnd(""); ok {
		t.Error("PrefixEnd(\"\") has an end")
	}
	if end, _ := contentindex.PrefixEnd("\U0010FFFF"); end != "" {
		t.Errorf("PrefixEnd(max rune) = %q", end)
	}
}
