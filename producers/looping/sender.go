package looping

import (
	"fmt"
	"sync"

	"github.com/millfleet/mill/pkg/queue"
)

// DefaultSendsInFlight is Config.SendsInFlight's default. A producer
// sends at most SendsInFlight × 10 tasks per round trip, fewer at each
// bite's end, where it waits for the bite's last batches: with bites of
// 1,000, 32 batches reach 10,000 tasks/s up to a 25 ms round trip, 8 only
// up to 8 ms (BenchmarkEnqueueStubSQS at 10 ms: 13,081 against 4,978
// tasks/s). 32 connections fit the SDK client's idle pool
// (endpoint.MaxIdleConnsPerHost).
const DefaultSendsInFlight = 32

// A bite's tasks go to the queue in batches of queue.MaxBatch, up to
// Config.SendsInFlight batches at a time. A batch is counted (Summary,
// State.Queued, Morsel.Queued) when the queue acknowledges it, and the
// bite ends — and the state is saved — only once every batch it sent is
// acknowledged: a kill repeats at most the tasks of the bite in progress,
// as with one batch at a time, and skips none.

// batch is one SendMessageBatch's tasks and what they count as.
type batch struct {
	entries []queue.SendEntry
	meta    []countKey
	err     error
}

// inflight are the batches of the current bite being sent.
type inflight struct {
	slots chan struct{} // one per batch in flight
	wg    sync.WaitGroup
	mu    sync.Mutex
	done  []*batch // acknowledged or failed, not yet counted
}

// flush hands the pending tasks (at most one batch) to a sender, waiting
// for a free slot, and counts the batches already acknowledged; it
// returns the error of a batch that failed.
func (r *runner) flush() error {
	if len(r.pending) > 0 {
		b := &batch{entries: r.pending, meta: r.pendMeta}
		r.pending = make([]queue.SendEntry, 0, queue.MaxBatch)
		r.pendMeta = make([]countKey, 0, queue.MaxBatch)
		f := &r.inflight
		if f.slots == nil {
			f.slots = make(chan struct{}, r.cfg.SendsInFlight)
		}
		select {
		case f.slots <- struct{}{}:
		case <-r.ctx.Done():
			return r.err()
		}
		f.wg.Go(func() {
			b.err = r.cfg.Queue.Send(r.ctx, b.entries...)
			f.mu.Lock()
			f.done = append(f.done, b)
			f.mu.Unlock()
			<-f.slots
		})
	}
	return r.reap()
}

// drain waits for every batch in flight and counts them; it returns the
// first failure.
func (r *runner) drain() error {
	r.inflight.wg.Wait()
	return r.reap()
}

// reap counts the acknowledged batches; a failed one is the bite's error.
func (r *runner) reap() error {
	f := &r.inflight
	f.mu.Lock()
	done := f.done
	f.done = nil
	f.mu.Unlock()
	var first error
	for _, b := range done {
		if b.err != nil {
			r.sendFailed = true
			if first == nil {
				first = fmt.Errorf("send to %s: %w", r.cfg.Queue.Name(), b.err)
			}
			continue
		}
		for _, k := range b.meta {
			r.sum.Queued.Add(k.typ, k.account, 1)
			r.st.Queued.Add(k.typ, k.account, 1)
		}
		r.morsel.Queued += int64(len(b.entries))
	}
	return first
}
