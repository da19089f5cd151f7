package workman

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// extender keeps every held or running message invisible: when half of a
// message's visibility timeout has passed it extends it to the full timeout
// again. Messages of one queue that are due (or nearly due) are extended
// together, up to MaxBatch per ChangeVisibility call. A failed extension is
// retried soon after (at its own time, not pulled forward with others); an
// extension that cannot succeed however often it is asked ends the tracking
// before the manager removes the message: a receipt the queue no longer knows
// (queue.ErrReceiptInvalid: the message was deleted or redelivered), or a
// request the queue will never accept (queue.ErrInvalid: SQS keeps a message
// in flight for at most 12 hours in all).
type extender struct {
	m    *Manager
	mu   sync.Mutex
	set  map[*tracked]struct{}
	wake chan struct{}
}

type tracked struct {
	qs  *qstate
	msg *queue.Message
	due time.Time // next extension; guarded by extender.mu
	// retry: the last extension failed and due is its retry, not to be
	// pulled forward with others; guarded by extender.mu.
	retry bool
}

func newExtender(m *Manager) *extender {
	return &extender{m: m, set: map[*tracked]struct{}{}, wake: make(chan struct{}, 1)}
}

func (e *extender) add(qs *qstate, msg *queue.Message) *tracked {
	it := &tracked{qs: qs, msg: msg, due: e.m.clk.Now().Add(qs.vt / 2)}
	e.mu.Lock()
	e.set[it] = struct{}{}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return it
}

func (e *extender) remove(it *tracked) {
	if it == nil {
		return
	}
	e.mu.Lock()
	delete(e.set, it)
	e.mu.Unlock()
}

func (e *extender) run(ctx context.Context) {
	for {
		now := e.m.clk.Now()
		due := map[*qstate][]*tracked{}
		var earliest time.Time
		e.mu.Lock()
		for it := range e.set {
			// Extend what falls due within a tenth of the timeout now,
			// so messages received close together share a call; a
			// retry waits for its time.
			at := it.due
			if !it.retry {
				at = at.Add(-it.qs.vt / 10)
			}
			if !at.After(now) {
				due[it.qs] = append(due[it.qs], it)
			} else if earliest.IsZero() || at.Before(earliest) {
				earliest = at
			}
		}
		e.mu.Unlock()
		if len(due) > 0 {
			for qs, items := range due {
				for len(items) > 0 {
					n := min(len(items), queue.MaxBatch)
					e.extend(ctx, qs, items[:n])
					items = items[n:]
				}
			}
			if ctx.Err() != nil {
				return
			}
			continue
		}
		var timer clock.Timer
		var timerC <-chan time.Time
		if !earliest.IsZero() {
			timer = e.m.clk.NewTimer(earliest.Sub(now))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-e.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (e *extender) extend(ctx context.Context, qs *qstate, items []*tracked) {
	changes := make([]queue.VisibilityChange, len(items))
	for i, it := range items {
		changes[i] = queue.VisibilityChange{Message: it.msg, Timeout: qs.vt}
	}
	cctx, cancel := context.WithTimeout(ctx, e.m.cfg.CallTimeout)
	err := qs.q.ChangeVisibility(cctx, changes...)
	cancel()
	now := e.m.clk.Now()
	failed := map[int]error{}
	var be *queue.BatchError
	if errors.As(err, &be) {
		failed = be.Failed
	} else if err != nil {
		for i := range items {
			failed[i] = err
		}
	}
	retryIn := min(time.Second, qs.vt/4)
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, it := range items {
		if _, ok := e.set[it]; !ok {
			continue // finished meanwhile
		}
		cause, bad := failed[i]
		switch {
		case !bad:
			it.due, it.retry = now.Add(qs.vt/2), false
		case errors.Is(cause, queue.ErrReceiptInvalid):
			delete(e.set, it)
			qs.log.Warn("visibility extension: the receipt is no longer valid (message redelivered or deleted)", "message_id", it.msg.ID)
		case errors.Is(cause, queue.ErrInvalid):
			delete(e.set, it)
			qs.log.Warn("visibility extension refused; no longer extending this message", "message_id", it.msg.ID, "error", cause)
		default:
			it.due, it.retry = now.Add(retryIn), true
			if ctx.Err() == nil {
				qs.log.Warn("visibility extension failed; retrying", "message_id", it.msg.ID, "error", cause, "retry_in", retryIn)
			}
		}
	}
}
