// Package shortid names an ID briefly in errors and logs: a hostile 10 KiB
// ID neither hides the reason that follows it (a dead letter keeps only the
// start of an error) nor fills the logs. pkg/storage (ShortID, QuoteID) and
// pkg/task (LogAttrs, String) use it; it sits below both.
package shortid

import (
	"strconv"
	"unicode/utf8"
)

// MaxLen is how many bytes of an ID Short and Quote keep.
const MaxLen = 200

// Short returns id unchanged when it is at most MaxLen bytes, else its
// first MaxLen bytes (cut at a rune boundary) followed by "…(N bytes)".
func Short(id string) string {
	if len(id) <= MaxLen {
		return id
	}
	return cutRunes(id, MaxLen) + "…(" + strconv.Itoa(len(id)) + " bytes)"
}

// Quote is Short with the kept part quoted as %q quotes it.
func Quote(id string) string {
	if len(id) <= MaxLen {
		return strconv.Quote(id)
	}
	return strconv.Quote(cutRunes(id, MaxLen)) + "…(" + strconv.Itoa(len(id)) + " bytes)"
}

// cutRunes returns s cut to at most n bytes without splitting a valid rune.
func cutRunes(s string, n int) string {
	s = s[:n]
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
