package looping

import (
	"context"
	"encoding/json"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// RunInfo identifies the run a call belongs to.
type RunInfo struct {
	Kind  string
	ID    string // State.RunID: the run's start in UTC, e.g. "20260101T000000Z"
	Start time.Time
}

// Emit queues tasks. The framework buffers them and sends them in batches
// of queue.MaxBatch; an error means some of them may not have been sent and
// the producer should return it. Emit must only be called during the Bite
// or Deletes call it was passed to.
type Emit func(ctx context.Context, tasks ...*task.Task) error

// BiteResult is what a producer reports after a bite.
type BiteResult struct {
	// Marker replaces the morsel's marker: where the next bite starts.
	Marker string
	// Done reports that the morsel is finished: no further bites.
	Done bool
	// Data, when non-nil, replaces the morsel's Data.
	Data json.RawMessage
}

// Producer is what a concrete looping producer implements.
//
// The framework calls Morsels once at the start of each run, then Bite
// repeatedly: one bite per unfinished morsel in listed order, round after
// round (A, B, C, A, B, C, …), until every morsel is done or the queue is
// full. A bite emits the tasks for at most max items following m.Marker
// (plus any closing task the producer owes when the morsel ends, such as
// the bit producer's BIT_REPORT) and returns the new marker and whether the
// morsel is done. A bite that emits nothing must finish the morsel or move
// its marker, or Run fails (it would never end otherwise).
//
// The framework saves the state only after a bite's tasks have all been
// sent. After a crash the same bite (same marker and Data) is asked for
// again, so Bite must be a pure function of (run, m, max) and the world
// it reads; the tasks it produces may be queued twice, never skipped.
//
// Calls are sequential; a Producer need not be safe for concurrent use.
type Producer interface {
	// Morsels lists the morsels of a new run, in the order to nibble
	// them. IDs must be unique and non-empty; Marker, flags and Queued of
	// the returned morsels are ignored (they start empty); Data is kept,
	// and so is Skipped: a morsel the producer leaves out of this run on
	// purpose, with the reason, which the summary reports.
	Morsels(ctx context.Context, run RunInfo) ([]Morsel, error)
	// Bite emits the next bite of m (at most max items) through emit.
	Bite(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error)
}

// Deleter is implemented by producers whose morsels start with a delete
// step (the duplication producer: destination items absent from the
// source). The delete step comes first in each morsel of the run, before
// its first Bite, and is taken in bites too: Deletes emits the delete
// tasks for at most max items following m.DeletesMarker, and its
// BiteResult's Marker becomes m.DeletesMarker and its Done ends the step
// (m.DeletesDone); Data replaces the morsel's. The state is saved after
// each of its bites, as after any other, so an invocation cut short
// resumes the step where its last saved bite ended instead of sending the
// step's tasks again. Without a Deleter, every morsel starts with
// DeletesDone set.
type Deleter interface {
	Deletes(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error)
}

// Follower is implemented by producers with work that outlives a run (the
// bit producer's at-rest checksum jobs). Run calls Follow once per
// invocation, under the lease and before anything else — also when no run
// is due — so the work is followed on every invocation. An error is
// logged and the invocation goes on (the next one follows again), unless
// ctx ended.
type Follower interface {
	Follow(ctx context.Context) error
}

// ProducerFuncs adapts plain functions to Producer (and Deleter when
// DeletesFunc is set, through AsProducer).
type ProducerFuncs struct {
	MorselsFunc func(ctx context.Context, run RunInfo) ([]Morsel, error)
	BiteFunc    func(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error)
	DeletesFunc func(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error)
}

// AsProducer returns f as a Producer, which is also a Deleter exactly when
// DeletesFunc is set.
func (f ProducerFuncs) AsProducer() Producer {
	if f.DeletesFunc != nil {
		return funcDeleter{funcProducer{f}}
	}
	return funcProducer{f}
}

type funcProducer struct{ f ProducerFuncs }

func (p funcProducer) Morsels(ctx context.Context, run RunInfo) ([]Morsel, error) {
	return p.f.MorselsFunc(ctx, run)
}

func (p funcProducer) Bite(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error) {
	return p.f.BiteFunc(ctx, run, m, max, emit)
}

type funcDeleter struct{ funcProducer }

func (p funcDeleter) Deletes(ctx context.Context, run RunInfo, m Morsel, max int, emit Emit) (BiteResult, error) {
	return p.f.DeletesFunc(ctx, run, m, max, emit)
}
