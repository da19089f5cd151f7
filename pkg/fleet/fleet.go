package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/process"
)

// DefaultTable is the fleet table's name `millctl setup` and Workman use by
// default (dynamofleet keeps the registry in it).
const DefaultTable = "mill-fleet"

// Defaults.
const (
	// DefaultInterval is how often a Workman writes its heartbeat and reads
	// the pauses.
	DefaultInterval = 30 * time.Second
	// LostAfter is how many intervals without a heartbeat make a worker
	// lost.
	LostAfter = 3
	// DefaultKeepLost is how long the record of a worker that stopped
	// beating without saying goodbye is kept (shown as lost) before it
	// expires.
	DefaultKeepLost = 24 * time.Hour
	// DefaultKeepGone is how long the record of a worker that shut down
	// cleanly is kept (shown as gone) before it expires.
	DefaultKeepGone = time.Hour
)

// State is what a worker is doing.
type State string

// States. A worker writes running, paused, draining and gone; lost is what
// a reader makes of a record whose heartbeat is too old (Worker.StateAt).
const (
	StateRunning State = "running" // receiving and running tasks
	StatePaused  State = "paused"  // every queue it receives from is paused
	// running, but holding back the tasks that need a dependency that does
	// not answer (Worker.Outages)
	StateDegraded State = "degraded"
	StateDraining State = "draining" // shutting down: no more receives, running tasks finish
	StateGone     State = "gone"     // shut down cleanly
	StateLost     State = "lost"     // no heartbeat for LostAfter intervals
)

// States lists every state in display order.
var States = []State{StateRunning, StateDegraded, StatePaused, StateDraining, StateLost, StateGone}

// Counts are a worker's task results since it started.
type Counts struct {
	// Processed tasks succeeded; Failed ones failed (retried or
	// dead-lettered: each failed attempt counts once); DeadLettered went to
	// the dead-letter queue (after failures, or at once: undecodable,
	// unknown type, permanent error).
	Processed    int64 `json:"processed"`
	Failed       int64 `json:"failed"`
	DeadLettered int64 `json:"dead_lettered"`
}

// Add returns c + d.
func (c Counts) Add(d Counts) Counts {
	return Counts{Processed: c.Processed + d.Processed, Failed: c.Failed + d.Failed, DeadLettered: c.DeadLettered + d.DeadLettered}
}

// Worker is one Workman's heartbeat record.
type Worker struct {
	// ID identifies the worker process (Workman's --worker-id).
	ID string `json:"id"`
	// Identity is the process's host, PID and start time.
	process.Identity
	// InstanceID and Zone are the EC2 instance and availability zone, read
	// from the instance metadata service; empty off EC2.
	InstanceID string `json:"instance_id,omitempty"`
	Zone       string `json:"zone,omitempty"`
	// Version of the workman binary.
	Version string `json:"version,omitempty"`
	// Heartbeat is when this record was written; Interval how often the
	// worker writes it.
	Heartbeat time.Time     `json:"heartbeat"`
	Interval  time.Duration `json:"interval"`
	// Expires is when the record may be removed (DynamoDB's TTL); readers
	// ignore records past it.
	Expires time.Time `json:"expires"`
	// Queues the worker receives from, highest priority first, and its
	// pool size.
	Queues []string `json:"queues"`
	Pool   int      `json:"pool"`
	// Held is the number of messages received and not yet finished
	// (waiting or running); Running the tasks running, by task type.
	Held    int            `json:"held"`
	Running map[string]int `json:"running,omitempty"`
	// Counts by task type since the worker started.
	Counts map[string]Counts `json:"counts,omitempty"`
	// State as the worker wrote it (see StateAt for what a reader shows).
	State State `json:"state"`
	// Pauses are the keys (Pause.Key) of the pauses the worker had read
	// and applied when it wrote this record.
	Pauses []string `json:"pauses,omitempty"`
	// Outages are the dependencies this worker found not answering and
	// has not seen answer again (its open circuits, pkg/workman): it holds
	// back their task types meanwhile, counting no attempts.
	Outages []Outage `json:"outages,omitempty"`
	// Note says why the worker is draining (a signal, an Auto Scaling
	// termination, a Spot interruption); empty otherwise.
	Note string `json:"note,omitempty"`
}

// Outage is a dependency a worker found not answering.
type Outage struct {
	// Dependency is its name as Workman keys its circuit: "postgres", or
	// an AWS service and host ("dynamodb dynamodb.us-east-1.amazonaws.com").
	Dependency string `json:"dependency"`
	// Since is when the worker found it down; Cause the error it met.
	Since time.Time `json:"since"`
	Cause string    `json:"cause,omitempty"`
	// Types are the task types held back for it.
	Types []string `json:"types,omitempty"`
}

// StateAt is the state to show for w at now: StateLost when a worker that
// has not said goodbye has not written for LostAfter intervals, else the
// state it wrote.
func (w Worker) StateAt(now time.Time) State {
	if w.State == StateGone {
		return StateGone
	}
	iv := w.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	if now.Sub(w.Heartbeat) > LostAfter*iv {
		return StateLost
	}
	return w.State
}

// Total is the sum of w's counts over every task type.
func (w Worker) Total() Counts {
	var t Counts
	for _, c := range w.Counts {
		t = t.Add(c)
	}
	return t
}

// Validate checks what Put needs.
func (w Worker) Validate() error {
	var errs []error
	if w.ID == "" {
		errs = append(errs, errors.New("empty worker ID"))
	}
	if !slices.Contains(States, w.State) || w.State == StateLost {
		errs = append(errs, fmt.Errorf("state %q: a worker writes running, degraded, paused, draining or gone", w.State))
	}
	if w.Heartbeat.IsZero() || w.Expires.IsZero() {
		errs = append(errs, errors.New("heartbeat and expiry must be set"))
	}
	if w.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval %v: must be positive", w.Interval))
	}
	return errors.Join(errs...)
}

// PauseKind says what a pause applies to.
type PauseKind string

// Pause kinds.
const (
	PauseType  PauseKind = "type"  // a task type (DUP, BIT, …)
	PauseQueue PauseKind = "queue" // a queue, by its full name
)

// Pause stops a task type or a queue fleet-wide until it is resumed.
type Pause struct {
	Kind PauseKind `json:"kind"`
	// Name is the task type or the full queue name.
	Name string `json:"name"`
	// By, At and Reason say who paused it, when, and why.
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Key is the pause's identity, "type:DUP" or "queue:mill-dup-low": pausing
// the same key again replaces the pause.
func (p Pause) Key() string { return string(p.Kind) + ":" + p.Name }

// String describes p for a person: `type DUP (by alice, 2026-…: reason)`.
func (p Pause) String() string {
	s := string(p.Kind) + " " + p.Name
	var about []string
	if p.By != "" {
		about = append(about, "by "+p.By)
	}
	if !p.At.IsZero() {
		about = append(about, "since "+p.At.UTC().Format(time.RFC3339))
	}
	if p.Reason != "" {
		about = append(about, "“"+p.Reason+"”")
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	return s
}

// Validate checks what Pause (the registry call) needs.
func (p Pause) Validate() error {
	var errs []error
	if p.Kind != PauseType && p.Kind != PauseQueue {
		errs = append(errs, fmt.Errorf("pause kind %q: want %q or %q", p.Kind, PauseType, PauseQueue))
	}
	if p.Name == "" {
		errs = append(errs, errors.New("empty pause name"))
	}
	return errors.Join(errs...)
}

// Registry stores the fleet's worker records and pauses.
//
// Contract (every implementation passes fleettest.Run):
//
//   - Put writes w's record, replacing any record of the same ID, in one
//     write. It refuses a record without an ID, heartbeat, expiry or
//     positive interval, or whose state is not one a worker writes.
//   - Workers returns every record whose Expires is not yet past (by the
//     implementation's clock), sorted by ID; expired records may still be
//     stored (DynamoDB's TTL removes them eventually) but are never
//     returned. Records come back as written (times to the millisecond).
//   - Pause stores p under p.Key(), replacing a pause of the same key;
//     Resume removes the pause with that kind and name and reports whether
//     there was one. Pauses returns the pauses in force, sorted by key, in
//     one read; a pause is returned by every Pauses call that starts after
//     Pause returned (reads are strongly consistent).
//   - All methods are safe for concurrent use; cancelling ctx abandons the
//     call.
type Registry interface {
	Put(ctx context.Context, w Worker) error
	Workers(ctx context.Context) ([]Worker, error)
	Pause(ctx context.Context, p Pause) error
	Resume(ctx context.Context, kind PauseKind, name string) (bool, error)
	Pauses(ctx context.Context) ([]Pause, error)
}

// Snapshot is the fleet as an operator sees it at one moment.
type Snapshot struct {
	At time.Time `json:"at"`
	// Workers with State replaced by StateAt(At) (lost workers shown as
	// such), sorted by ID.
	Workers []Worker `json:"workers"`
	// Totals counts the workers by state.
	Totals map[State]int `json:"totals"`
	// Pauses in force, sorted by key.
	Pauses []Pause `json:"pauses"`
}

// Read takes a Snapshot of r at now: two reads (workers, pauses).
func Read(ctx context.Context, r Registry, now time.Time) (Snapshot, error) {
	ws, err := r.Workers(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	ps, err := r.Pauses(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{At: now, Workers: ws, Pauses: ps, Totals: map[State]int{}}
	for _, st := range States {
		s.Totals[st] = 0
	}
	for i := range s.Workers {
		st := s.Workers[i].StateAt(now)
		s.Workers[i].State = st
		s.Totals[st]++
	}
	return s, nil
}
