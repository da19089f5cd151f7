package storage_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// TestParseRestoreTier: the three tiers in any case, "" for Bulk, and a
// clear error for anything else.
func TestParseRestoreTier(t *testing.T) {
	for in, want := range map[string]storage.RestoreTier{
		"": storage.RestoreBulk, "Bulk": storage.RestoreBulk, "bulk": storage.RestoreBulk,
		"STANDARD": storage.RestoreStandard, "Expedited": storage.RestoreExpedited,
	} {
		if got, err := storage.ParseRestoreTier(in); err != nil || got != want {
			t.Errorf("ParseRestoreTier(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Glacial", "Bulk ", "Standard\x00", "ExpeditedX"} {
		if got, err := storage.ParseRestoreTier(in); err == nil {
			t.Errorf("ParseRestoreTier(%q) = %q, want an error", in, got)
		}
	}
}
