package evidence

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Committer groups the events of concurrent callers into batches (group
// commit): Record returns once the batch holding its event is committed to
// the log (its checkpoint written), so a caller that acknowledges its work
// only after Record returns loses no event in a crash, and one that
// retries after an error or a crash appends nothing twice (the event's ID).
// A batch is appended when it holds MaxBatch events or MaxDelay after its
// first event, whichever comes first. Run does the appending.
type Committer struct {
	Log      *Log
	MaxBatch int           // 0: 1,000
	MaxDelay time.Duration // 0: 1 s

	reqs    chan commitRequest
	stopped chan struct{} // closed when Run returns
}

type commitRequest struct {
	e    *Event
	done chan error
}

// ErrCommitterStopped is Record's error once Run has returned.
var ErrCommitterStopped = errors.New("evidence: committer stopped")

// ErrConflict is Record's error for an event whose ID the log holds with
// other bytes: the event was not recorded (an ID names one action).
var ErrConflict = errors.New("evidence: the log holds this event ID with other content")

// NewCommitter returns a Committer of the log.
func NewCommitter(l *Log, maxBatch int, maxDelay time.Duration) *Committer {
	if maxBatch <= 0 {
		maxBatch = 1000
	}
	if maxDelay <= 0 {
		maxDelay = time.Second
	}
	return &Committer{Log: l, MaxBatch: maxBatch, MaxDelay: maxDelay, reqs: make(chan commitRequest), stopped: make(chan struct{})}
}

// Record adds the event to the next batch and waits until that batch is
// committed. An invalid event is refused at once (it never joins a
// batch). When Record returns an error — the batch failed, or ctx ended
// first — the event may or may not be in the log: record it again.
func (c *Committer) Record(ctx context.Context, e *Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	r := commitRequest{e: e, done: make(chan error, 1)}
	select {
	case c.reqs <- r:
	case <-c.stopped:
		return ErrCommitterStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run appends batches until ctx ends; then it appends the batch it was
// collecting (with a context that is not cancelled, so its callers learn
// the outcome) and returns. Run once per Committer.
func (c *Committer) Run(ctx context.Context) {
	defer close(c.stopped)
	for {
		var batch []commitRequest
		select {
		case r := <-c.reqs:
			batch = append(batch, r)
		case <-ctx.Done():
			return
		}
		timer := time.NewTimer(c.MaxDelay)
	collect:
		for len(batch) < c.MaxBatch {
			select {
			case r := <-c.reqs:
				batch = append(batch, r)
			case <-timer.C:
				break collect
			case <-ctx.Done():
				break collect
			}
		}
		timer.Stop()
		events := make([]*Event, len(batch))
		for i, r := range batch {
			events[i] = r.e
		}
		res, err := c.Log.Append(context.WithoutCancel(ctx), events)
		conflicts := map[string]bool{}
		for _, id := range res.Conflicts {
			conflicts[id] = true
		}
		for _, r := range batch {
			switch {
			case err != nil:
				r.done <- err
			case conflicts[r.e.ID]:
				r.done <- fmt.Errorf("%w: %s", ErrConflict, r.e.ID)
			default:
				r.done <- nil
			}
		}
	}
}
