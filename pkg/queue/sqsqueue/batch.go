package sqsqueue

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// chunkFunc makes one batch request for the entries at the given argument
// indexes (each entry's Id is its index) and returns the per-entry failures.
type chunkFunc func(ctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error)

// batcher runs the chunks of one batch call and collects per-entry failures
// by argument index.
type batcher struct {
	q      *Queue
	op     string
	failed map[int]error
	// ignore reports entry errors that mean success for this operation
	// (an already deleted message for delete).
	ignore func(code, message string) bool
}

func newBatcher(q *Queue, op string) *batcher {
	return &batcher{q: q, op: op, failed: map[int]error{}}
}

func (b *batcher) fail(i int, err error) { b.failed[i] = err }

func (b *batcher) err() error {
	if len(b.failed) == 0 {
		return nil
	}
	return &queue.BatchError{Op: b.op, Failed: b.failed}
}

// runAll runs call over the entries 0..n-1 in chunks of queue.MaxBatch,
// leaving out (as failed) each one check refuses.
func (b *batcher) runAll(ctx context.Context, n int, check func(i int) error, call chunkFunc) {
	var chunk []int
	for i := range n {
		if err := check(i); err != nil {
			b.fail(i, err)
			continue
		}
		chunk = append(chunk, i)
		if len(chunk) == queue.MaxBatch {
			b.run(ctx, chunk, call)
			chunk = nil
		}
	}
	if len(chunk) > 0 {
		b.run(ctx, chunk, call)
	}
}

// run sends the chunk, then sends again the entries that failed through no
// fault of the sender, with doubling backoff, up to Config.Retries times.
// An entry error with a portable meaning (a stale receipt handle, an invalid
// argument) is final whatever its SenderFault says: sending it again cannot
// change the answer (LocalStack marks every entry error a service fault).
// Sender faults and entries still failing are recorded. A failed request
// (already retried by the SDK) fails every entry of the chunk; once ctx is
// done, every later chunk fails with ctx's error without a request.
func (b *batcher) run(ctx context.Context, idx []int, call chunkFunc) {
	backoff := b.q.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			for _, i := range idx {
				b.failed[i] = err
			}
			return
		}
		fails, err := call(ctx, idx)
		if err != nil {
			err = errCtx(ctx, err)
			for _, i := range idx {
				b.failed[i] = err
			}
			return
		}
		var retry []int
		for _, f := range fails {
			i, perr := strconv.Atoi(aws.ToString(f.Id))
			if perr != nil {
				// An Id SQS did not get from us: fail the whole
				// chunk rather than lose track of an entry.
				for _, j := range idx {
					b.failed[j] = &EntryError{Code: "UnknownEntryId", Message: aws.ToString(f.Id)}
				}
				return
			}
			ee := &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			if b.ignore != nil && b.ignore(ee.Code, ee.Message) {
				continue
			}
			if !f.SenderFault && ee.Unwrap() == nil && attempt < b.q.cfg.Retries {
				retry = append(retry, i)
				continue
			}
			b.failed[i] = ee
		}
		if len(retry) == 0 {
			return
		}
		if err := clock.Sleep(ctx, b.q.cfg.Clock, backoff); err != nil {
			for _, i := range retry {
				b.failed[i] = err
			}
			return
		}
		backoff = min(2*backoff, 5*time.Second)
		idx = retry
	}
}
