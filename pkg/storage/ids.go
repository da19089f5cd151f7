package storage

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/millfleet/mill/internal/base/shortid"
)

// ID limits every provider accepts at least (providers may refuse less, with
// ErrInvalidID, when their own keys would exceed a native limit).
const (
	// MaxSpaceIDLen is the longest space ID in bytes.
	MaxSpaceIDLen = 63
	// MaxContentIDLen is the longest content ID in bytes (S3's key limit).
	MaxContentIDLen = 1024
)

// ValidateSpaceID reports whether id can name a space: 1..MaxSpaceIDLen bytes
// of valid UTF-8, one path segment (no '/' or '\'), no control characters,
// and not starting with '.' (names starting with '.' are reserved for the
// providers' own bookkeeping). The error wraps ErrInvalidID.
func ValidateSpaceID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty space ID", ErrInvalidID)
	case len(id) > MaxSpaceIDLen:
		return fmt.Errorf("%w: space ID is %d bytes (limit %d)", ErrInvalidID, len(id), MaxSpaceIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: space ID %q is not valid UTF-8", ErrInvalidID, id)
	case strings.ContainsAny(id, `/\`):
		return fmt.Errorf("%w: space ID %q contains a path separator", ErrInvalidID, id)
	case id[0] == '.':
		return fmt.Errorf("%w: space ID %q starts with '.' (reserved)", ErrInvalidID, id)
	case hasControl(id):
		return fmt.Errorf("%w: space ID %q contains a control character", ErrInvalidID, id)
	}
	return nil
}

// ValidateContentID reports whether id can name a content item on every
// provider: 1..MaxContentIDLen bytes of valid UTF-8 without control
// characters (NUL included). Slashes, spaces, '+', '%' and any other
// printable character are allowed. The error wraps ErrInvalidID.
func ValidateContentID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty content ID", ErrInvalidID)
	case len(id) > MaxContentIDLen:
		return fmt.Errorf("%w: content ID is %d bytes (limit %d)", ErrInvalidID, len(id), MaxContentIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: content ID %s is not valid UTF-8", ErrInvalidID, QuoteID(id))
	case hasControl(id):
		return fmt.Errorf("%w: content ID %s contains a control character", ErrInvalidID, QuoteID(id))
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// DefaultMimeType is the mimetype providers record when a put names none.
const DefaultMimeType = "application/octet-stream"

// MaxShownIDLen is how many bytes of an ID ShortID and QuoteID keep.
const MaxShownIDLen = shortid.MaxLen

// ShortID returns id unchanged when it is at most MaxShownIDLen bytes, else
// its first MaxShownIDLen bytes (cut at a rune boundary) followed by
// "…(N bytes)". Errors and log attributes name IDs through it, so a hostile
// 10 KiB ID neither hides the reason that follows it (a dead letter keeps
// only the start of an error) nor fills the logs.
func ShortID(id string) string { return shortid.Short(id) }

// QuoteID is ShortID with the kept part quoted as %q quotes it.
func QuoteID(id string) string { return shortid.Quote(id) }
