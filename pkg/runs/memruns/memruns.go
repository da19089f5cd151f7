// Package memruns is an in-memory runs.Store for unit tests and the dev
// mode, held to runstest.Run like the PostgreSQL one.
package memruns

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
)

type key struct{ producer, id string }

type run struct {
	st       runs.Status
	outcomes map[string]runs.Outcome
	requests map[string]int64
}

// Store is an in-memory runs.Store.
type Store struct {
	clk  clock.Clock
	mu   sync.Mutex
	runs map[key]*run
}

// New returns an empty store reading the time from clk (nil: the real
// clock).
func New(clk clock.Clock) *Store {
	return &Store{clk: clock.Or(clk), runs: map[key]*run{}}
}

func (s *Store) now(t time.Time) time.Time {
	if t.IsZero() {
		t = s.clk.Now()
	}
	return runs.Truncate(t)
}

// Start implements runs.Store.
func (s *Store) Start(_ context.Context, r runs.Run) error {
	if err := r.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{r.Producer, r.ID}
	if _, ok := s.runs[k]; ok {
		return nil
	}
	r.Started = s.now(r.Started)
	s.runs[k] = &run{st: runs.Status{Run: r}, outcomes: map[string]runs.Outcome{}}
	return nil
}

func (s *Store) get(producer, id string) (*run, error) {
	r, ok := s.runs[key{producer, id}]
	if !ok {
		return nil, fmt.Errorf("%w: %s %q", runs.ErrNoRun, producer, id)
	}
	return r, nil
}

// Enqueued implements runs.Store.
func (s *Store) Enqueued(_ context.Context, producer, id string, n int64) error {
	return s.count(producer, id, n, func(r *run) {})
}

// Listed implements runs.Store.
func (s *Store) Listed(_ context.Context, producer, id string, n int64, at time.Time) error {
	return s.count(producer, id, n, func(r *run) { r.st.Listed = s.now(at) })
}

// count sets the run's queued count to n and applies f, under the lock.
func (s *Store) count(producer, id string, n int64, f func(*run)) error {
	if n < 0 {
		return fmt.Errorf("%w: negative count %d", runs.ErrInvalid, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return err
	}
	r.st.Enqueued = n
	f(r)
	return nil
}

// Record implements runs.Store.
func (s *Store) Record(_ context.Context, o runs.Outcome) (runs.Status, error) {
	if err := o.Validate(); err != nil {
		return runs.Status{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(o.Producer, o.RunID)
	if err != nil {
		return runs.Status{}, err
	}
	o.At = s.now(o.At)
	o.Item, o.Reason, o.Error = runs.Clip(o.Item), runs.Clip(o.Reason), runs.Clip(o.Error)
	r.requests = pricing.AddCounts(r.requests, o.Requests)
	o.Requests = nil
	old, seen := r.outcomes[o.Key]
	if seen && old.State.Final() {
		return r.st, nil
	}
	if seen {
		r.st.Failed-- // old is StateFailed
	}
	switch o.State {
	case runs.StateDone:
		r.st.Done++
	case runs.StateDead:
		r.st.Dead++
	case runs.StateFailed:
		r.st.Failed++
	}
	r.outcomes[o.Key] = o
	if r.st.FirstOutcome.IsZero() || o.At.Before(r.st.FirstOutcome) {
		r.st.FirstOutcome = o.At
	}
	if o.At.After(r.st.LastOutcome) {
		r.st.LastOutcome = o.At
	}
	return r.st, nil
}

// Complete implements runs.Store.
func (s *Store) Complete(_ context.Context, producer, id, report string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return false, err
	}
	if !r.st.Finished() || !r.st.Completed.IsZero() {
		return false, nil
	}
	r.st.Completed, r.st.Report = s.now(at), report
	return true, nil
}

// Get implements runs.Store.
func (s *Store) Get(_ context.Context, producer, id string) (runs.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return runs.Status{}, err
	}
	return r.st, nil
}

// List implements runs.Store.
func (s *Store) List(_ context.Context, limit int) ([]runs.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runs.Status, 0, len(s.runs))
	for _, r := range s.runs {
		out = append(out, r.st)
	}
	slices.SortFunc(out, func(a, b runs.Status) int {
		return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// Failures implements runs.Store.
func (s *Store) Failures(_ context.Context, producer, id string, limit int) ([]runs.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return nil, err
	}
	var out []runs.Outcome
	for _, o := range r.outcomes {
		if o.State != runs.StateDone {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, runs.FailureOrder)
	return out[:min(len(out), max(limit, 0))], nil
}

// Attempts implements runs.Store.
func (s *Store) Attempts(_ context.Context, producer, id string) (map[task.Type]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return nil, err
	}
	out := map[task.Type]int64{}
	for _, o := range r.outcomes {
		out[o.Type] += int64(max(o.Attempts, 1))
	}
	return out, nil
}

// Requests implements runs.Store.
func (s *Store) Requests(_ context.Context, producer, id string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return nil, err
	}
	return maps.Clone(r.requests), nil
}

// AddRequests implements runs.Store.
func (s *Store) AddRequests(_ context.Context, producer, id string, reqs map[string]int64) error {
	if err := runs.CheckRequests(id, reqs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(producer, id)
	if err != nil {
		return err
	}
	r.requests = pricing.AddCounts(r.requests, reqs)
	return nil
}
