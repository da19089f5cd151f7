package bit

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// Router is the queue a bit producer's looping.Loop sends to. The framework
// sends to one queue; Router passes BIT_REPORT tasks to the bit-report
// queue and everything else to the bit queue, in the order given (so a
// space's report is sent after its last BITs), and reports the bit queue's
// name and depth, so the framework's queue-full check watches the bit
// queue. Receive, Delete and the visibility calls go to the bit queue.
type Router struct {
	Bit    queue.Queue
	Report queue.Queue
}

var _ queue.Queue = (*Router)(nil)

// Name is the bit queue's name.
func (r *Router) Name() string { return r.Bit.Name() }

// Send routes each entry by the type of the task in its body. Entries
// that do not decode go to the bit queue (whose consumer dead-letters
// them). A *queue.BatchError from either queue is returned with indexes of
// this call's entries.
func (r *Router) Send(ctx context.Context, entries ...queue.SendEntry) error {
	var bits, reports []queue.SendEntry
	var bitIdx, reportIdx []int
	for i, e := range entries {
		if t, err := task.Decode(e.Body); err == nil && t.Type == task.TypeBitReport {
			reports, reportIdx = append(reports, e), append(reportIdx, i)
			continue
		}
		bits, bitIdx = append(bits, e), append(bitIdx, i)
	}
	failed := map[int]error{}
	send := func(q queue.Queue, es []queue.SendEntry, idx []int) {
		if len(es) == 0 {
			return
		}
		err := q.Send(ctx, es...)
		for _, i := range queue.FailedIndexes(err, len(es)) {
			cause := err
			if be, ok := err.(*queue.BatchError); ok {
				cause = be.Failed[i]
			}
			failed[idx[i]] = fmt.Errorf("%s: %w", q.Name(), cause)
		}
	}
	send(r.Bit, bits, bitIdx)
	send(r.Report, reports, reportIdx)
	if len(failed) > 0 {
		return &queue.BatchError{Op: "send", Failed: failed}
	}
	return nil
}

// Receive receives from the bit queue.
func (r *Router) Receive(ctx context.Context, max int, wait time.Duration) ([]*queue.Message, error) {
	return r.Bit.Receive(ctx, max, wait)
}

// ReceiveWith receives from the bit queue.
func (r *Router) ReceiveWith(ctx context.Context, o queue.ReceiveOptions) ([]*queue.Message, error) {
	return r.Bit.ReceiveWith(ctx, o)
}

// Purge purges the bit queue.
func (r *Router) Purge(ctx context.Context) error { return r.Bit.Purge(ctx) }

// Delete deletes from the bit queue.
func (r *Router) Delete(ctx context.Context, msgs ...*queue.Message) error {
	return r.Bit.Delete(ctx, msgs...)
}

// ChangeVisibility acts on the bit queue.
func (r *Router) ChangeVisibility(ctx context.Context, changes ...queue.VisibilityChange) error {
	return r.Bit.ChangeVisibility(ctx, changes...)
}

// Release acts on the bit queue.
func (r *Router) Release(ctx context.Context, msgs ...*queue.Message) error {
	return r.Bit.Release(ctx, msgs...)
}

// Depth is the bit queue's depth.
func (r *Router) Depth(ctx context.Context) (queue.Depth, error) { return r.Bit.Depth(ctx) }

// VisibilityTimeout is the bit queue's.
func (r *Router) VisibilityTimeout(ctx context.Context) (time.Duration, error) {
	return r.Bit.VisibilityTimeout(ctx)
}
