package stores

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

const day = 24 * time.Hour

// FixityTarget returns the store's fixity target with the defaults filled
// in: DefaultFixityInterval, DefaultArchivedFixityInterval, a SampleRate of
// 1, and on an s3 store ArchivedComputeChecksum. ArchivedNone is never a
// default: it is there only when accounts.json says so. An fs store has no
// archival storage class; its ArchivedMethod stays as written ("" or
// ArchivedNone).
func (s Store) FixityTarget() Fixity {
	f := s.Fixity
	if f.Interval <= 0 {
		f.Interval = DefaultFixityInterval
	}
	if f.ArchivedInterval <= 0 {
		f.ArchivedInterval = DefaultArchivedFixityInterval
	}
	if f.ArchivedMethod == "" && s.Kind == storage.KindS3 {
		f.ArchivedMethod = ArchivedComputeChecksum
	}
	if !(f.SampleRate > 0 && f.SampleRate <= 1) {
		f.SampleRate = 1
	}
	return f
}

// String describes the target for a table: "90d; archived 365d
// compute-checksum; sample 0.5" (the parts that apply).
func (f Fixity) String() string {
	s := FormatFixityDuration(f.Interval)
	if f.ArchivedMethod != "" {
		s += "; archived " + FormatFixityDuration(f.ArchivedInterval) + " " + string(f.ArchivedMethod)
	}
	if f.SampleRate > 0 && f.SampleRate < 1 {
		s += "; sample " + strconv.FormatFloat(f.SampleRate, 'g', -1, 64)
	}
	return s
}

// MarshalJSON writes the "fixity" object of accounts.json: the fields set,
// durations as whole days ("90d") when they are, Go durations otherwise.
func (f Fixity) MarshalJSON() ([]byte, error) {
	type out struct {
		Interval         string         `json:"interval,omitempty"`
		ArchivedInterval string         `json:"archivedInterval,omitempty"`
		ArchivedMethod   ArchivedMethod `json:"archivedMethod,omitempty"`
		SampleRate       float64        `json:"sampleRate,omitempty"`
	}
	o := out{ArchivedMethod: f.ArchivedMethod, SampleRate: f.SampleRate}
	if f.Interval != 0 {
		o.Interval = FormatFixityDuration(f.Interval)
	}
	if f.ArchivedInterval != 0 {
		o.ArchivedInterval = FormatFixityDuration(f.ArchivedInterval)
	}
	return json.Marshal(o)
}

// FormatFixityDuration writes d as whole days ("90d") when it is a whole
// number of days, as a Go duration otherwise ("36h0m0s").
func FormatFixityDuration(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

var wholeDays = regexp.MustCompile(`^-?[0-9]+d$`)

// ParseFixityDuration reads a Go duration ("720h") or a whole number of
// days ("90d"); it must be positive.
func ParseFixityDuration(s string) (time.Duration, error) {
	var d time.Duration
	if wholeDays.MatchString(s) {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "d"), 10, 64)
		if err != nil || n > math.MaxInt64/int64(day) || n < -math.MaxInt64/int64(day) {
			return 0, fmt.Errorf("%q is too long", s)
		}
		d = time.Duration(n) * day
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration (want a Go duration such as \"720h\" or whole days such as \"90d\")", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

// fixityAt is a store's "fixity" object as parsed: the target, and where
// its archival fields are (0: absent), which parseAccount checks against
// the store's kind.
type fixityAt struct {
	f                          Fixity
	archivedMethodOff, archOff int64
	problems                   []problemAt
}

// problemAt is a problem of a store found at an offset of the file,
// labelled with the account and store by parseAccount.
type problemAt struct {
	off int64
	msg string
}

// parseFixity reads the value of a store's "fixity" key. The error is one
// that stops the walk (broken JSON); value problems are in problems.
func parseFixity(w *jsonpos.Walker) (fixityAt, error) {
	var fa fixityAt
	bad := func(off int64, format string, args ...any) {
		fa.problems = append(fa.problems, problemAt{off, "fixity: " + fmt.Sprintf(format, args...)})
	}
	t, off, err := w.Token()
	if err != nil {
		return fa, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		bad(off, "must be an object such as {\"interval\": \"90d\"}, not %s", jsonpos.Describe(t))
		if ok {
			return fa, w.SkipRest(d)
		}
		return fa, nil
	}
	have := map[string]bool{}
	for w.More() {
		key, koff, err := w.String("key")
		if err != nil {
			return fa, err
		}
		if have[key] {
			bad(koff, "key %q appears twice", key)
		}
		have[key] = true
		switch key {
		case "interval", "archivedInterval":
			t, voff, err := scalar(w)
			if err != nil {
				return fa, err
			}
			v, ok := t.(string)
			if !ok {
				bad(voff, "%s must be a string such as \"90d\" or \"720h\", not %s", key, jsonpos.Describe(t))
				continue
			}
			d, err := ParseFixityDuration(v)
			if err != nil {
				bad(voff, "%s %v", key, err)
				continue
			}
			if key == "interval" {
				fa.f.Interval = d
			} else {
				fa.f.ArchivedInterval, fa.archOff = d, voff
			}
		case "archivedMethod":
			t, voff, err := scalar(w)
			if err != nil {
				return fa, err
			}
			v, ok := t.(string)
			if !ok {
				bad(voff, "archivedMethod must be one of the strings compute-checksum, restore or none, not %s", jsonpos.Describe(t))
				continue
			}
			switch m := ArchivedMethod(v); m {
			case ArchivedComputeChecksum, ArchivedRestore, ArchivedNone:
				fa.f.ArchivedMethod, fa.archivedMethodOff = m, voff
			default:
				bad(voff, "unknown archivedMethod %q (want compute-checksum, restore or none)", v)
			}
		case "sampleRate":
			t, voff, err := scalar(w)
			if err != nil {
				return fa, err
			}
			n, ok := t.(json.Number)
			if !ok {
				bad(voff, "sampleRate must be a number more than 0 and at most 1, not %s", jsonpos.Describe(t))
				continue
			}
			r, err := strconv.ParseFloat(n.String(), 64)
			if err != nil || !(r > 0 && r <= 1) {
				bad(voff, "sampleRate %s must be more than 0 and at most 1", n)
				continue
			}
			fa.f.SampleRate = r
		default:
			bad(koff, "unknown key %q (want interval, archivedInterval, archivedMethod, sampleRate)", key)
			if err := w.Skip(); err != nil {
				return fa, err
			}
		}
	}
	return fa, w.End()
}

// scalar reads the next value; an object or array is skipped and returned
// as its opening delimiter (for the error).
func scalar(w *jsonpos.Walker) (json.Token, int64, error) {
	t, off, err := w.Token()
	if err != nil {
		return nil, off, err
	}
	if d, ok := t.(json.Delim); ok {
		return t, off, w.SkipRest(d)
	}
	return t, off, nil
}

// kindProblems lists what the store's kind forbids in its fixity target:
// an fs store has no archival storage class, so it takes no
// archivedInterval and no archivedMethod but none.
func (fa fixityAt) kindProblems(kind storage.Kind) []problemAt {
	if kind != storage.KindFS {
		return nil
	}
	var out []problemAt
	if fa.archOff != 0 {
		out = append(out, problemAt{fa.archOff, "fixity: archivedInterval is for s3 stores: an fs store has no archival storage class"})
	}
	if fa.archivedMethodOff != 0 && fa.f.ArchivedMethod != ArchivedNone {
		out = append(out, problemAt{fa.archivedMethodOff, fmt.Sprintf("fixity: archivedMethod %q is for s3 stores: an fs store has no archival storage class (leave it out, or none)", fa.f.ArchivedMethod)})
	}
	return out
}
