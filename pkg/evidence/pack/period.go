package pack

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Period is the time a pack reports on: [Since, Until), in UTC.
type Period struct {
	// Name is "2026-Q3", "2026-07", or "SINCE--UNTIL" (RFC 3339 dates or
	// times) for an explicit range; it names the bundle.
	Name         string
	Since, Until time.Time
}

var (
	quarterRE = regexp.MustCompile(`^([0-9]{4})-[Qq]([1-4])$`)
	monthRE   = regexp.MustCompile(`^([0-9]{4})-([0-9]{2})$`)
)

// ParsePeriod reads a quarter ("2026-Q3": July to September) or a month
// ("2026-07").
func ParsePeriod(s string) (Period, error) {
	if m := quarterRE.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[1])
		q, _ := strconv.Atoi(m[2])
		since := time.Date(y, time.Month(3*(q-1)+1), 1, 0, 0, 0, 0, time.UTC)
		return Period{Name: fmt.Sprintf("%04d-Q%d", y, q), Since: since, Until: since.AddDate(0, 3, 0)}, nil
	}
	if m := monthRE.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		if mo < 1 || mo > 12 {
			return Period{}, fmt.Errorf("period %q: month %02d is not 01 to 12", s, mo)
		}
		since := time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, time.UTC)
		return Period{Name: fmt.Sprintf("%04d-%02d", y, mo), Since: since, Until: since.AddDate(0, 1, 0)}, nil
	}
	return Period{}, fmt.Errorf("period %q: want a quarter (2026-Q3) or a month (2026-07)", s)
}

// ParseTime reads a --since or --until value: a date (2026-07-01, the
// start of that day in UTC) or an RFC 3339 time.
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want a date (2026-07-01) or an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// Range is the period [since, until), named after its bounds.
func Range(since, until time.Time) (Period, error) {
	if !since.Before(until) {
		return Period{}, errors.New("period: since must be before until")
	}
	since, until = since.UTC(), until.UTC()
	return Period{Name: stamp(since) + "--" + stamp(until), Since: since, Until: until}, nil
}

// stamp writes t as a date when it is midnight, else as a compact time
// (a file name has no colons).
func stamp(t time.Time) string {
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02T150405Z")
}

// Contains reports whether t is within the period.
func (p Period) Contains(t time.Time) bool { return !t.Before(p.Since) && t.Before(p.Until) }
