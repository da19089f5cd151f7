package looping

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Frequency is how often a looping producer starts a new run: N seconds,
// minutes, hours, days or calendar months. The zero Frequency disables
// looping: the first run is done, and no further run is ever due.
type Frequency struct {
	N    int
	Unit Unit
}

// Unit is a Frequency unit, written as its letter.
type Unit byte

// Frequency units. Minutes are a capital M and months a small m, as in the
// DuraCloud producers' configuration.
const (
	Seconds Unit = 's'
	Minutes Unit = 'M'
	Hours   Unit = 'h'
	Days    Unit = 'd'
	Months  Unit = 'm'
)

// maxMonths bounds a month frequency (a thousand years).
const maxMonths = 12000

var unitDuration = map[Unit]time.Duration{
	Seconds: time.Second,
	Minutes: time.Minute,
	Hours:   time.Hour,
	Days:    24 * time.Hour,
}

// ErrFrequency is wrapped by every ParseFrequency error.
var ErrFrequency = errors.New("looping: bad frequency")

// ParseFrequency parses "N" followed by one unit letter: s (seconds),
// M (minutes), h (hours), d (days; 24 hours) or m (calendar months), e.g.
// "30s", "10M", "1d", "1m". "0" (with or without a unit) disables looping.
// No spaces, signs or fractions are accepted.
func ParseFrequency(s string) (Frequency, error) {
	bad := func(format string, a ...any) (Frequency, error) {
		return Frequency{}, fmt.Errorf("%w %q: %s", ErrFrequency, s, fmt.Sprintf(format, a...))
	}
	if s == "" {
		return bad("empty (want a number and a unit, e.g. 7d; 0 disables looping)")
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return bad("does not start with a number (want e.g. 30s, 10M, 12h, 7d, 1m)")
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return bad("number too large")
	}
	rest := s[i:]
	if rest == "" {
		if n == 0 {
			return Frequency{}, nil
		}
		return bad("missing unit (s seconds, M minutes, h hours, d days, m months)")
	}
	if len(rest) > 1 {
		return bad("unexpected %q after the unit (one letter: s, M, h, d or m)", rest[1:])
	}
	u := Unit(rest[0])
	if n == 0 {
		if u == Months || unitDuration[u] != 0 {
			return Frequency{}, nil
		}
		return bad("unknown unit %q (want s seconds, M minutes, h hours, d days, m months)", rest)
	}
	switch {
	case u == Months:
		if n > maxMonths {
			return bad("more than %d months", maxMonths)
		}
	case unitDuration[u] != 0:
		if int64(n) > math.MaxInt64/int64(unitDuration[u]) {
			return bad("too long (more than %v)", time.Duration(math.MaxInt64))
		}
	default:
		return bad("unknown unit %q (want s seconds, M minutes, h hours, d days, m months)", rest)
	}
	return Frequency{N: n, Unit: u}, nil
}

// IsZero reports whether f disables looping.
func (f Frequency) IsZero() bool { return f.N == 0 }

// Next returns when the run after one that started at start is due; the
// zero time when f disables looping. Months are calendar months
// (time.AddDate: 31 January + 1m is 3 March, Go's normalisation).
func (f Frequency) Next(start time.Time) time.Time {
	switch {
	case f.N == 0:
		return time.Time{}
	case f.Unit == Months:
		return start.AddDate(0, f.N, 0)
	default:
		return start.Add(time.Duration(f.N) * unitDuration[f.Unit])
	}
}

// String returns the form ParseFrequency accepts ("0" for the zero value).
func (f Frequency) String() string {
	if f.N == 0 {
		return "0"
	}
	return strconv.Itoa(f.N) + string(rune(f.Unit))
}

// MarshalText implements encoding.TextMarshaler.
func (f Frequency) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseFrequency.
func (f *Frequency) UnmarshalText(b []byte) error {
	v, err := ParseFrequency(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}
