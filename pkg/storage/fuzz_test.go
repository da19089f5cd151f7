package storage_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/storage"
)

// FuzzValidateIDs checks the ID rules every provider relies on: an accepted
// space ID is one path segment of 1..MaxSpaceIDLen bytes of UTF-8 without
// control characters and not starting with '.'; an accepted content ID is
// 1..MaxContentIDLen bytes of UTF-8 without control characters (NUL
// included). Every refusal wraps ErrInvalidID.
func FuzzValidateIDs(f *testing.F) {
	for _, s := range []string{"photos", "a/b/c.txt", "../../etc/passwd", "a\x00b", ".mill-tmp", "\xff", "x\x7f", strings.Repeat("a", 1025), "😀/文件"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		control := strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if err := storage.ValidateSpaceID(id); err != nil {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Fatalf("ValidateSpaceID(%q): %v does not wrap ErrInvalidID", id, err)
			}
		} else if id == "" || len(id) > storage.MaxSpaceIDLen || !utf8.ValidString(id) || control ||
			strings.ContainsAny(id, `/\`) || id[0] == '.' {
			t.Fatalf("ValidateSpaceID accepted %q", id)
		}
		if err := storage.ValidateContentID(id); err != nil {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Fatalf("ValidateContentID(%q): %v does not wrap ErrInvalidID", id, err)
			}
		} else if id == "" || len(id) > storage.MaxContentIDLen || !utf8.ValidString(id) || control {
			t.Fatalf("ValidateContentID accepted %q", id)
		}
	})
}
