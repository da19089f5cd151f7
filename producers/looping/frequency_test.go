package looping

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseFrequency(t *testing.T) {
	start := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want Frequency
		next time.Time
	}{
		{"30s", Frequency{30, Seconds}, start.Add(30 * time.Second)},
		{"10M", Frequency{10, Minutes}, start.Add(10 * time.Minute)},
		{"12h", Frequency{12, Hours}, start.Add(12 * time.Hour)},
		{"7d", Frequency{7, Days}, start.Add(7 * 24 * time.Hour)},
		{"1m", Frequency{1, Months}, time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)}, // 31 Feb normalises
		{"2m", Frequency{2, Months}, time.Date(2026, 3, 31, 10, 0, 0, 0, time.UTC)},
		{"0", Frequency{}, time.Time{}},
		{"0d", Frequency{}, time.Time{}},
		{"0m", Frequency{}, time.Time{}},
	} {
		got, err := ParseFrequency(tc.in)
		if err != nil {
			t.Errorf("ParseFrequency(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseFrequency(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if n := got.Next(start); !n.Equal(tc.next) {
			t.Errorf("%q.Next(%v) = %v, want %v", tc.in, start, n, tc.next)
		}
	}
}

func TestParseFrequencyErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"", "empty"},
		{"d", "does not start with a number"},
		{"-1d", "does not start with a number"},
		{" 1d", "does not start with a number"},
		{"1", "missing unit"},
		{"1x", `unknown unit "x"`},
		{"1D", `unknown unit "D"`},
		{"1.5h", `unexpected "5h"`},
		{"1dd", `unexpected "d"`},
		{"1d ", `unexpected " "`},
		{"99999999999999999999s", "number too large"},
		{"9999999999999d", "too long"},
		{"12001m", "more than 12000 months"},
	} {
		_, err := ParseFrequency(tc.in)
		if err == nil {
			t.Errorf("ParseFrequency(%q): no error", tc.in)
			continue
		}
		if !errors.Is(err, ErrFrequency) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
			t.Errorf("ParseFrequency(%q) = %v, want ErrFrequency naming the input and %q", tc.in, err, tc.msg)
		}
	}
}

func TestFrequencyText(t *testing.T) {
	var f Frequency
	if err := f.UnmarshalText([]byte("3h")); err != nil || f != (Frequency{3, Hours}) {
		t.Fatalf("UnmarshalText: %+v %v", f, err)
	}
	if b, _ := f.MarshalText(); string(b) != "3h" {
		t.Fatalf("MarshalText = %q", b)
	}
	if err := f.UnmarshalText([]byte("3q")); err == nil {
		t.Fatal("UnmarshalText accepted 3q")
	}
}

func FuzzParseFrequency(f *testing.F) {
	for _, s := range []string{"30s", "10M", "1h", "7d", "1m", "0", "0s", "", "1x", "999999999999999999999d", "12000m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fr, err := ParseFrequency(s)
		if err != nil {
			if !errors.Is(err, ErrFrequency) {
				t.Fatalf("error %v does not wrap ErrFrequency", err)
			}
			return
		}
		// Whatever parses round-trips through String and moves time
		// forward (or disables looping).
		again, err := ParseFrequency(fr.String())
		if err != nil || again != fr {
			t.Fatalf("round trip %q → %+v → %q → %+v, %v", s, fr, fr.String(), again, err)
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if n := fr.Next(start); fr.IsZero() != n.IsZero() || (!n.IsZero() && !n.After(start)) {
			t.Fatalf("%q: Next(%v) = %v", s, start, n)
		}
	})
}
