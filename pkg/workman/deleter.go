package workman

import (
	"context"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// maxConcurrentDeletes bounds the delete calls one queue's deleter has in
// flight at once.
const maxConcurrentDeletes = 4

// deleter deletes one queue's finished messages in batches: a batch goes
// when it holds MaxBatch messages or DeleteFlush after its first one. Failed
// entries are retried (OperationAttempts); an entry that keeps failing is
// logged and its message left to be redelivered — a duplicate, never a
// loss. A message stays under visibility extension until its delete
// succeeds.
type deleter struct {
	m   *Manager
	qs  *qstate
	in  chan *job
	sem chan struct{}

	mu     sync.Mutex
	closed bool

	flushes sync.WaitGroup
	exited  chan struct{}
}

func newDeleter(m *Manager, qs *qstate) *deleter {
	return &deleter{
		m: m, qs: qs,
		in:     make(chan *job, m.cfg.Workers+queue.MaxBatch),
		sem:    make(chan struct{}, maxConcurrentDeletes),
		exited: make(chan struct{}),
	}
}

// add queues j's message for deletion.
func (d *deleter) add(j *job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		// Only a task that outlived the hard stop gets here; its message
		// was released already.
		d.m.ext.remove(j.item)
		return
	}
	d.in <- j
}

// close ends intake; run flushes what it holds and exits.
func (d *deleter) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.in)
	}
}

// wait waits until run has exited and every delete call has returned.
func (d *deleter) wait() { <-d.exited }

func (d *deleter) run(ctx context.Context) {
	defer close(d.exited)
	var buf []*job
	var timer clock.Timer
	var timerC <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
	}
	for {
		select {
		case j, ok := <-d.in:
			if !ok {
				stopTimer()
				if len(buf) > 0 {
					d.flush(ctx, buf)
				}
				d.flushes.Wait()
				return
			}
			buf = append(buf, j)
			if len(buf) == 1 {
				timer = d.m.clk.NewTimer(d.m.cfg.DeleteFlush)
				timerC = timer.C()
			}
			if len(buf) >= queue.MaxBatch {
				stopTimer()
				d.flush(ctx, buf)
				buf = nil
			}
		case <-timerC:
			timer, timerC = nil, nil
			d.flush(ctx, buf)
			buf = nil
		}
	}
}

// flush starts a delete call for batch, at most maxConcurrentDeletes at once.
func (d *deleter) flush(ctx context.Context, batch []*job) {
	d.sem <- struct{}{}
	d.flushes.Go(func() {
		defer func() { <-d.sem }()
		d.deleteBatch(ctx, batch)
	})
}

func (d *deleter) deleteBatch(ctx context.Context, batch []*job) {
	wait := d.m.cfg.OperationRetryBase
	for attempt := 1; ; attempt++ {
		msgs := make([]*queue.Message, len(batch))
		for i, j := range batch {
			msgs[i] = j.msg
		}
		cctx, cancel := context.WithTimeout(ctx, d.m.cfg.CallTimeout)
		err := d.qs.q.Delete(cctx, msgs...)
		cancel()
		failedIdx := queue.FailedIndexes(err, len(batch))
		failed := make(map[int]bool, len(failedIdx))
		for _, i := range failedIdx {
			failed[i] = true
		}
		var rest []*job
		for i, j := range batch {
			if failed[i] {
				rest = append(rest, j)
			} else {
				d.m.ext.remove(j.item)
			}
		}
		if len(rest) == 0 {
			return
		}
		if attempt >= d.m.cfg.OperationAttempts || ctx.Err() != nil {
			for _, j := range rest {
				d.qs.log.Error("delete failed; the message will be redelivered", "message_id", j.msg.ID, "error", err, "attempts", attempt)
				d.m.ext.remove(j.item)
			}
			return
		}
		d.qs.log.Warn("delete failed for some entries; retrying them", "failed", len(rest), "of", len(batch), "error", err)
		batch = rest
		_ = clock.Sleep(ctx, d.m.clk, wait) // if ctx ended, the next round gives up
		wait *= 2
	}
}
