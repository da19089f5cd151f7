package storage_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func TestShortAndQuoteID(t *testing.T) {
	long := strings.Repeat("d/", 5<<10)
	for _, tc := range []struct{ id, short, quoted string }{
		{"a/b c", "a/b c", `"a/b c"`},
		{"a\x00b", "a\x00b", `"a\x00b"`},
		{strings.Repeat("x", storage.MaxShownIDLen), strings.Repeat("x", storage.MaxShownIDLen), `"` + strings.Repeat("x", storage.MaxShownIDLen) + `"`},
		{long, long[:storage.MaxShownIDLen] + "…(10240 bytes)", `"` + long[:storage.MaxShownIDLen] + `"…(10240 bytes)`},
		// A rune across the cut is dropped whole.
		{strings.Repeat("x", storage.MaxShownIDLen-1) + "é" + "yz", strings.Repeat("x", storage.MaxShownIDLen-1) + "…(203 bytes)", `"` + strings.Repeat("x", storage.MaxShownIDLen-1) + `"…(203 bytes)`},
	} {
		if got := storage.ShortID(tc.id); got != tc.short {
			t.Errorf("ShortID(%.20q…) = %.40q…, want %.40q…", tc.id, got, tc.short)
		}
		if got := storage.QuoteID(tc.id); got != tc.quoted {
			t.Errorf("QuoteID(%.20q…) = %q, want %q", tc.id, got, tc.quoted)
		}
	}
}

// A refused ID is named briefly (at most 4 bytes per kept byte once
// quoted), so the reason stays near the start.
func TestValidateContentIDNamesLongIDsBriefly(t *testing.T) {
	id := strings.Repeat("\x01", 1000)
	err := storage.ValidateContentID(id)
	if err == nil || len(err.Error()) > 4*storage.MaxShownIDLen+100 || !strings.HasSuffix(err.Error(), "contains a control character") {
		t.Errorf("error (%d bytes): %.300v", len(err.Error()), err)
	}
}
