package looping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
)

// StateVersion is the version of the State JSON this package writes (a
// journal's base and entries, journal.go). DecodeState also accepts
// version 1, the whole state in one object before the journal.
const StateVersion = 2

// ErrState is wrapped by every DecodeState error.
var ErrState = errors.New("looping: bad state")

// Morsel is one unit of a run: its progress and whatever the concrete
// producer needs to carry on (Data).
type Morsel struct {
	// ID names the morsel; unique within a run (e.g. "acme/spaceA/1→2").
	ID string `json:"id"`
	// Marker is where the next bite starts (the last content ID queued);
	// "" before the first bite. The producer sets it with each bite.
	Marker string `json:"marker,omitempty"`
	// DeletesMarker is where the next bite of the delete step starts
	// (the Deleter's marker, like Marker for bites); "" before its first.
	DeletesMarker string `json:"deletes_marker,omitempty"`
	// DeletesDone is set once the morsel's delete step has finished (at
	// once for producers that are not a Deleter).
	DeletesDone bool `json:"deletes_done"`
	// Done is set when the producer reports the morsel finished.
	Done bool `json:"done"`
	// Skipped, set by the producer's Morsels, says why the morsel is left
	// out of this run (e.g. "last report SUCCESS 12 days ago"): it is done
	// at once, and the run's summary lists it with the reason.
	Skipped string `json:"skipped,omitempty"`
	// Failed says why the morsel was given up for this run: set by the
	// framework when its steps failed Config.MorselAttempts times in a
	// row, or by the producer's Morsels for a part of the sweep it could
	// not even list (a store that cannot be opened). A failed morsel is
	// done; the summary, the notification and the exit status report it,
	// and the next run lists it again (it is retried then).
	Failed string `json:"failed,omitempty"`
	// Failures counts the morsel's consecutive failed steps (reset by a
	// step that succeeds).
	Failures int `json:"failures,omitempty"`
	// Queued counts the tasks sent for this morsel in this run (a bite
	// re-sent after a crash counts twice).
	Queued int64 `json:"queued"`
	// Data is free-form JSON the producer owns (account, store IDs, counts);
	// the framework stores it and hands it back unchanged.
	Data json.RawMessage `json:"data,omitempty"`
}

// Counts are task counts by task type, then account ("" when a task carries
// no account).
type Counts map[string]map[string]int64

// Add adds n tasks of type typ for account.
func (c Counts) Add(typ, account string, n int64) {
	m := c[typ]
	if m == nil {
		m = map[string]int64{}
		c[typ] = m
	}
	m[account] += n
}

// Total is the number of tasks counted.
func (c Counts) Total() int64 {
	var n int64
	for _, m := range c {
		for _, v := range m {
			n += v
		}
	}
	return n
}

// Clone returns a deep copy of c (never nil).
func (c Counts) Clone() Counts {
	out := Counts{}
	for k, m := range c {
		out[k] = maps.Clone(m)
	}
	return out
}

// State is what a looping producer remembers between invocations. It is
// saved as JSON after every bite.
type State struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	RunFields
	// Morsels of the current (or last) run, in the order they are nibbled.
	Morsels []Morsel `json:"morsels"`
	// Queued counts the tasks sent in the current (or last) run.
	Queued Counts `json:"queued,omitempty"`
}

// RunFields are a State's fields other than its version, kind, morsels
// and counts: where the run stands. A journal entry holds them whole.
type RunFields struct {
	// RunID identifies the current (or last) run; the producer may put it
	// on tasks (the bit producer's runId). It is the run's start in UTC,
	// e.g. "20260101T000000Z".
	RunID string `json:"run_id,omitempty"`
	// CurrentRunStart is when the run in progress started; zero when no
	// run is in progress.
	CurrentRunStart time.Time `json:"current_run_start,omitzero"`
	// NextRunStart is when the next run is due: the current (or last)
	// run's start + the frequency. Zero when looping is disabled.
	NextRunStart time.Time `json:"next_run_start,omitzero"`
	// LastRunStart and LastRunEnd describe the last completed run.
	LastRunStart time.Time `json:"last_run_start,omitzero"`
	LastRunEnd   time.Time `json:"last_run_end,omitzero"`
	// Cursor is the index of the morsel whose turn is next.
	Cursor int `json:"cursor"`
	// Bites taken and invocations made in the current (or last) run.
	Bites       int64 `json:"bites"`
	Invocations int64 `json:"invocations"`
	// SavedAt is when the state was last saved.
	SavedAt time.Time `json:"saved_at,omitzero"`
}

// InRun reports whether a run is in progress.
func (s *State) InRun() bool { return !s.CurrentRunStart.IsZero() }

// MorselsDone counts the morsels that are done.
func (s *State) MorselsDone() int {
	n := 0
	for _, m := range s.Morsels {
		if m.Done {
			n++
		}
	}
	return n
}

// Encode returns the JSON of s (indented, for operators who read it).
func (s *State) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // IDs such as "acme/space/1>2" stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("looping: encode state: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeState parses and checks state JSON (one object: a store's base
// without its journal, or a version 1 state): the version must be 1 or
// StateVersion, morsel IDs non-empty and unique, and a run in progress must
// have a run ID.
func DecodeState(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *State) validate() error {
	var errs []error
	if s.Version != 1 && s.Version != StateVersion {
		errs = append(errs, fmt.Errorf("version %d (this build reads versions 1 and %d)", s.Version, StateVersion))
	}
	if s.Kind == "" {
		errs = append(errs, errors.New("no kind"))
	}
	if s.InRun() && s.RunID == "" {
		errs = append(errs, errors.New("run in progress without a run_id"))
	}
	if s.Cursor < 0 || (s.Cursor > 0 && s.Cursor >= len(s.Morsels)) {
		errs = append(errs, fmt.Errorf("cursor %d outside the %d morsels", s.Cursor, len(s.Morsels)))
	}
	seen := map[string]bool{}
	for i, m := range s.Morsels {
		switch {
		case m.ID == "":
			errs = append(errs, fmt.Errorf("morsel %d has no id", i))
		case seen[m.ID]:
			errs = append(errs, fmt.Errorf("morsel id %q appears twice", m.ID))
		}
		seen[m.ID] = true
		if m.Queued < 0 || m.Failures < 0 {
			errs = append(errs, fmt.Errorf("morsel %q: negative queued or failure count", m.ID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	return nil
}
