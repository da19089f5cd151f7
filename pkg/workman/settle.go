package workman

import (
	"sync"
	"time"
)

// How long a long poll on a queue of unknown state must go unanswered before
// the queue counts as quiet (it "settles"). SQS answers a receive on a queue
// holding messages within a round trip, long poll or not, so a poll that has
// been out several round trips found its queue empty when it was asked. The
// round trip is learnt from the answers: the settle wait is settleFactor
// times the slowest of the last latencySamples answers that brought messages,
// at least settleFloor and at most ReceiveWait, and ReceiveWait until the
// first such answer.
const (
	latencySamples = 16
	settleFactor   = 4
	settleFloor    = 50 * time.Millisecond
)

// answerLatency keeps the recent answer times of receives that expected
// messages: a batch receive of a backlogged queue, or the watch of a queue of
// unknown state. A watch of a quiet queue is not a sample: it returns when a
// message arrives, however long after it was asked.
type answerLatency struct {
	mu      sync.Mutex
	ring    [latencySamples]time.Duration
	n, next int
	changed chan struct{} // closed and replaced by every sample
}

func newAnswerLatency() *answerLatency {
	return &answerLatency{changed: make(chan struct{})}
}

// observe records an answer that brought messages after d.
func (a *answerLatency) observe(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ring[a.next] = d
	a.next = (a.next + 1) % latencySamples
	a.n = min(a.n+1, latencySamples)
	close(a.changed)
	a.changed = make(chan struct{})
}

// settleWait returns how long an unanswered long poll must have been out
// before its queue counts as quiet (at most limit), and a channel closed
// when the next sample may change that.
func (a *answerLatency) settleWait(limit time.Duration) (time.Duration, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		return limit, a.changed
	}
	var slowest time.Duration
	for _, d := range a.ring[:a.n] {
		slowest = max(slowest, d)
	}
	return min(max(settleFactor*slowest, settleFloor), limit), a.changed
}
