package looping

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// The zone database is compiled in, so --start-at "02:00 Europe/Berlin"
	// works in a container without one.
	_ "time/tzdata"
)

// DefaultStartWindow is how long after the start time of day a run may
// still begin (Config.StartWindow's default): an invocation within it
// starts the due run, a later one leaves it for the next day's start time.
const DefaultStartWindow = 4 * time.Hour

// ErrStartAt is wrapped by every ParseStartAt error.
var ErrStartAt = errors.New("looping: bad start time")

// StartAt is the time of day runs begin at, in a time zone (UTC unless
// given): a monthly run that starts at night, whatever hour the scheduler
// happens to invoke the producer. The zero StartAt sets no time.
type StartAt struct {
	Hour, Minute int
	Loc          *time.Location
}

// ParseStartAt parses "HH:MM" (UTC) or "HH:MM Area/City" (an IANA time
// zone, e.g. "02:00 America/New_York"); "" is the zero StartAt.
func ParseStartAt(s string) (StartAt, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return StartAt{}, nil
	}
	clock, zone, _ := strings.Cut(s, " ")
	var h, m int
	if n, err := fmt.Sscanf(clock, "%d:%d", &h, &m); err != nil || n != 2 || len(clock) != 5 || h < 0 || h > 23 || m < 0 || m > 59 {
		return StartAt{}, fmt.Errorf("%w %q: want HH:MM (00:00 to 23:59), optionally followed by a time zone such as Europe/Berlin", ErrStartAt, s)
	}
	loc := time.UTC
	if zone = strings.TrimSpace(zone); zone != "" {
		l, err := time.LoadLocation(zone)
		if err != nil {
			return StartAt{}, fmt.Errorf("%w %q: time zone: %v", ErrStartAt, s, err)
		}
		loc = l
	}
	return StartAt{Hour: h, Minute: m, Loc: loc}, nil
}

// IsZero reports whether no start time is set.
func (s StartAt) IsZero() bool { return s.Loc == nil }

// String returns the form ParseStartAt accepts ("" for the zero value).
func (s StartAt) String() string {
	if s.IsZero() {
		return ""
	}
	out := fmt.Sprintf("%02d:%02d", s.Hour, s.Minute)
	if s.Loc != time.UTC {
		out += " " + s.Loc.String()
	}
	return out
}

// MarshalText implements encoding.TextMarshaler.
func (s StartAt) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseStartAt.
func (s *StartAt) UnmarshalText(b []byte) error {
	v, err := ParseStartAt(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// On returns the start time on the calendar day of t in s's zone.
func (s StartAt) On(t time.Time) time.Time {
	t = t.In(s.Loc)
	return time.Date(t.Year(), t.Month(), t.Day(), s.Hour, s.Minute, 0, 0, s.Loc)
}

// Due returns when a run that the frequency makes due at base may start,
// seen at now: the start time on base's day, or, when now is already more
// than window past it, the start time of the first day whose window now
// has not passed (today's, or tomorrow's).
func (s StartAt) Due(base, now time.Time, window time.Duration) time.Time {
	d := s.On(base)
	if now.Sub(d) <= window {
		return d
	}
	if d = s.On(now); now.Sub(d) <= window {
		return d
	}
	return s.On(now.In(s.Loc).AddDate(0, 0, 1))
}
