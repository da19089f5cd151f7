package bitlog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AtRestKey names the at-rest job of one space in one producer run: a run
// makes at most one job per space.
type AtRestKey struct {
	RunID, Account, StoreID, SpaceID string // all required
}

// String is the key for messages.
func (k AtRestKey) String() string {
	return fmt.Sprintf("%s:%s/%s/%s", k.RunID, k.Account, k.StoreID, k.SpaceID)
}

// Validate reports a missing field (wrapping ErrInvalid).
func (k AtRestKey) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"run", k.RunID}, {"account", k.Account}, {"store", k.StoreID}, {"space", k.SpaceID}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: at-rest job %s: missing %s", ErrInvalid, k, f[0]))
		}
	}
	return errors.Join(errs...)
}

// AtRestState is where the bit producer is with an at-rest job.
type AtRestState string

// At-rest job states, in the order the producer moves a job through them.
const (
	// AtRestListing: the producer is listing the space and recording its
	// archived objects (AddAtRestObjects); no job exists yet.
	AtRestListing AtRestState = "listing"
	// AtRestSubmitted: the job was created (JobID set); the producer
	// follows it.
	AtRestSubmitted AtRestState = "submitted"
	// AtRestIngested: the job completed and its completion report is in
	// the log (RecordAtRestResults); the producer queues one BIT task
	// per object.
	AtRestIngested AtRestState = "ingested"
	// AtRestQueued: every object's BIT task was queued. Final.
	AtRestQueued AtRestState = "queued"
	// AtRestFailed: the job failed or was cancelled; the producer
	// recorded an ERROR row for each of its objects. Final.
	AtRestFailed AtRestState = "failed"
)

// Valid reports whether s is one of the states.
func (s AtRestState) Valid() bool {
	switch s {
	case AtRestListing, AtRestSubmitted, AtRestIngested, AtRestQueued, AtRestFailed:
		return true
	}
	return false
}

// Open reports whether the producer still has work with a job in this
// state (it follows submitted jobs and queues ingested ones).
func (s AtRestState) Open() bool { return s == AtRestSubmitted || s == AtRestIngested }

// Ingested reports whether the job's results are in the log.
func (s AtRestState) Ingested() bool { return s == AtRestIngested || s == AtRestQueued }

// AtRestJob is the bit producer's record of the at-rest checksum job of
// one space in one run (see atrest.Checker). Only the producer writes it
// and its objects; no queue message can. A BIT task naming a job is
// checked against it: the processor uses a computed checksum only when
// the record says the job is the run's job for the space, is ingested and
// holds a result for the item.
type AtRestJob struct {
	AtRestKey
	// JobID is the provider's job ID ("" while listing).
	JobID string
	State AtRestState
	// Objects is how many objects the job's manifest lists.
	Objects int64
	// Reason is the provider's explanation of a failed or cancelled job.
	Reason string
	// Submitted is when the job was created (zero before); a copy changed
	// after it may have been computed before or after the change.
	Submitted time.Time
	// Updated is when the record last changed (zero: now).
	Updated time.Time
}

// AtRestObject is one object of an at-rest job: recorded from the
// listing, then given its result from the job's completion report.
type AtRestObject struct {
	ContentID    string // required
	Size         int64  // as listed
	StorageClass string // as listed
	// Reported: the completion report has a line for the object.
	Reported bool
	// OK: the provider computed the checksum; Checksum is then its MD5
	// (lower-case hex).
	OK       bool
	Checksum string
	// Error is the provider's error when Reported and !OK.
	Error string
}

// AtRestJobs is the bit producer's record of its at-rest jobs (pgbitlog
// and membitlog implement it; bitlogtest.RunAtRest holds them to it).
//
//   - AddAtRestObjects records objects of the job of k, creating the job
//     in state AtRestListing if it is not recorded; an object recorded
//     already is replaced (a repeated bite lists again). Once the job has
//     left AtRestListing it fails with ErrInvalid: a submitted manifest
//     never grows.
//   - SetAtRestJob updates the job's JobID, State, Objects, Reason and
//     Submitted (zero: kept); the job must be recorded (ErrNoAtRestJob).
//     A job never goes back: from a final state, or to an earlier state,
//     it fails with ErrInvalid.
//   - RecordAtRestResults sets the result fields of objects of the job;
//     a result for a content ID the job does not list is left out and not
//     counted. It returns how many objects it set.
//   - AtRestJob and AtRestObject return the records or ErrNoAtRestJob.
//   - AtRestObjects pages the job's objects in byte-wise ContentID order
//     after `after`, at most PageSize(limit).
//   - OpenAtRestJobs lists the jobs in an Open state, oldest first.
type AtRestJobs interface {
	AddAtRestObjects(ctx context.Context, k AtRestKey, objs []AtRestObject) error
	SetAtRestJob(ctx context.Context, j AtRestJob) error
	RecordAtRestResults(ctx context.Context, k AtRestKey, results []AtRestObject) (int, error)
	AtRestJob(ctx context.Context, k AtRestKey) (AtRestJob, error)
	AtRestObject(ctx context.Context, k AtRestKey, contentID string) (AtRestObject, error)
	AtRestObjects(ctx context.Context, k AtRestKey, after string, limit int) (objs []AtRestObject, more bool, err error)
	OpenAtRestJobs(ctx context.Context) ([]AtRestJob, error)
}

// stateOrder is the position of a state in a job's life.
func stateOrder(s AtRestState) int {
	switch s {
	case AtRestListing:
		return 0
	case AtRestSubmitted:
		return 1
	case AtRestIngested:
		return 2
	}
	return 3 // final
}

// CheckAtRestMove reports whether the recorded job old may become j
// (ErrInvalid otherwise): j is well formed, its state is not earlier than
// old's, a final state stays as it is, and a job ID once set is kept.
func CheckAtRestMove(old, j AtRestJob) error {
	from := old.State
	if err := j.Validate(); err != nil {
		return err
	}
	if !j.State.Valid() {
		return fmt.Errorf("%w: at-rest job %s: unknown state %q", ErrInvalid, j.AtRestKey, j.State)
	}
	if j.Objects < 0 {
		return fmt.Errorf("%w: at-rest job %s: negative object count", ErrInvalid, j.AtRestKey)
	}
	if j.State != AtRestListing && j.JobID == "" {
		return fmt.Errorf("%w: at-rest job %s: state %s without a job ID", ErrInvalid, j.AtRestKey, j.State)
	}
	final := from == AtRestQueued || from == AtRestFailed
	if (final && j.State != from) || stateOrder(j.State) < stateOrder(from) {
		return fmt.Errorf("%w: at-rest job %s: from %s to %s", ErrInvalid, j.AtRestKey, from, j.State)
	}
	if old.JobID != "" && j.JobID != old.JobID {
		return fmt.Errorf("%w: at-rest job %s: job ID %q cannot become %q", ErrInvalid, j.AtRestKey, old.JobID, j.JobID)
	}
	return nil
}

// ValidateAtRestObject reports an object without a content ID or with a
// negative size (wrapping ErrInvalid).
func ValidateAtRestObject(k AtRestKey, o AtRestObject) error {
	if o.ContentID == "" || o.Size < 0 {
		return fmt.Errorf("%w: at-rest job %s: object %q of size %d", ErrInvalid, k, o.ContentID, o.Size)
	}
	return nil
}
