package looping

import (
	"errors"
	"testing"
	"time"
)

func TestParseStartAt(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	for in, want := range map[string]StartAt{
		"02:00":                  {2, 0, time.UTC},
		"23:59":                  {23, 59, time.UTC},
		" 00:30 ":                {0, 30, time.UTC},
		"02:00 America/New_York": {2, 0, ny},
	} {
		got, err := ParseStartAt(in)
		if err != nil || got.Hour != want.Hour || got.Minute != want.Minute || got.Loc.String() != want.Loc.String() {
			t.Errorf("ParseStartAt(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseStartAt(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("round trip of %q: %q, %v", in, got.String(), err)
		}
	}
	if s, err := ParseStartAt(""); err != nil || !s.IsZero() {
		t.Errorf(`ParseStartAt("") = %+v, %v`, s, err)
	}
	for _, bad := range []string{"2:00", "24:00", "12:60", "noon", "02:00:00", "02:00 Mars/Olympus", "-1:00"} {
		if _, err := ParseStartAt(bad); !errors.Is(err, ErrStartAt) {
			t.Errorf("ParseStartAt(%q): %v, want ErrStartAt", bad, err)
		}
	}
}

func TestStartAtDue(t *testing.T) {
	s := StartAt{Hour: 2, Minute: 0, Loc: time.UTC}
	at := func(d, h, m int) time.Time { return time.Date(2026, 5, d, h, m, 0, 0, time.UTC) }
	w := 4 * time.Hour
	for _, tc := range []struct {
		name      string
		base, now time.Time
		want      time.Time
	}{
		{"first run, before the start time", at(10, 1, 0), at(10, 1, 0), at(10, 2, 0)},
		{"first run, within the window", at(10, 3, 30), at(10, 3, 30), at(10, 2, 0)},
		{"first run, past the window", at(10, 15, 0), at(10, 15, 0), at(11, 2, 0)},
		{"due later today", at(10, 9, 0), at(10, 1, 0), at(10, 2, 0)},
		{"due on a later day", at(12, 9, 0), at(10, 15, 0), at(12, 2, 0)},
		{"due long ago, now within today's window", at(1, 2, 0), at(10, 5, 59), at(10, 2, 0)},
		{"due long ago, now past today's window", at(1, 2, 0), at(10, 6, 1), at(11, 2, 0)},
	} {
		if got := s.Due(tc.base, tc.now, w); !got.Equal(tc.want) {
			t.Errorf("%s: Due(%v, %v) = %v, want %v", tc.name, tc.base, tc.now, got, tc.want)
		}
	}
	// In a zone, across the change to summer time (02:00 does not exist in
	// New York on 8 March 2026: Go moves it to 03:00 EDT).
	ny, _ := time.LoadLocation("America/New_York")
	z := StartAt{Hour: 2, Minute: 30, Loc: ny}
	if got := z.On(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)); got.Hour() != 2 || got.Day() != 7 || got.UTC().Hour() != 7 {
		t.Errorf("On 7 March in New York: %v", got)
	}
	if got := z.On(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)); got.Hour() != 2 || got.UTC().Hour() != 6 {
		t.Errorf("On 9 March in New York (EDT): %v", got)
	}
}
