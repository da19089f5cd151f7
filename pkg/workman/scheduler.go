package workman

import "time"

// scheduler decides which queue to receive from next. It is pure state
// (no goroutines, no clock): the poll loop asks next(now) and reports each
// answer with result, so the policy is tested deterministically.
//
// Policy (docs/ARCHITECTURE.md, Workman):
//   - queues are tried in priority order; a queue is due when its own
//     backoff has expired; the first due queue is asked with the short wait;
//   - a queue that answered empty backs off (min doubling to max); one that
//     returned messages is due again at once, so after a non-empty receive
//     the next choice starts again at the top;
//   - after an empty answer the search goes on down the list from the next
//     queue, and only wraps to the top when no lower queue is due: a pass
//     always reaches the lowest queue. (Restarting at the top after every
//     empty answer starves the lower queues whenever a pass over the higher
//     ones takes longer than their backoff — slow endpoints, short
//     backoffs — and then busy low queues are never read.)
//   - when every queue's latest answer was empty the scheduler goes idle for
//     idleDelay (min doubling to max across consecutive idle periods): it
//     long-polls only the top queue; when the idle period ends it sweeps all
//     queues again. Any message resets the idle delay to its minimum.
type scheduler struct {
	wait, idleWait         time.Duration
	backoffMin, backoffMax time.Duration
	idleMin, idleMax       time.Duration
	due                    []time.Time
	backoff                []time.Duration
	empty                  []bool // latest answer was empty
	cursor                 int    // where the search for a due queue starts
	idle                   bool
	idleUntil              time.Time
	idleDelay              time.Duration // the next idle period's length
}

// pick is one decision: receive from queue with wait, or (queue < 0) sleep
// until until.
type pick struct {
	queue int
	wait  time.Duration
	until time.Time
	idle  bool // the receive is the idle long poll
}

func newScheduler(n int, c Config) *scheduler {
	return &scheduler{
		wait: c.ReceiveWait, idleWait: c.IdlePollWait,
		backoffMin: c.QueueBackoffMin, backoffMax: c.QueueBackoffMax,
		idleMin: c.IdleBackoffMin, idleMax: c.IdleBackoffMax,
		due: make([]time.Time, n), backoff: make([]time.Duration, n), empty: make([]bool, n),
		idleDelay: c.IdleBackoffMin,
	}
}

func (s *scheduler) next(now time.Time) pick {
	if s.idle {
		if now.Before(s.idleUntil) {
			return pick{queue: 0, wait: min(s.idleWait, s.idleUntil.Sub(now)), idle: true}
		}
		// The idle period is over: sweep every queue; until each has
		// answered again none is known empty.
		s.idle = false
		s.cursor = 0
		for i := range s.due {
			s.due[i] = now
			s.empty[i] = false
		}
	}
	allEmpty := true
	for _, e := range s.empty {
		allEmpty = allEmpty && e
	}
	if allEmpty {
		s.idle = true
		s.idleUntil = now.Add(s.idleDelay)
		s.idleDelay = min(2*s.idleDelay, s.idleMax)
		return pick{queue: 0, wait: min(s.idleWait, s.idleUntil.Sub(now)), idle: true}
	}
	var earliest time.Time
	n := len(s.due)
	for k := 0; k < n; k++ {
		i := (s.cursor + k) % n
		if d := s.due[i]; !now.Before(d) {
			return pick{queue: i, wait: s.wait}
		} else if earliest.IsZero() || d.Before(earliest) {
			earliest = d
		}
	}
	return pick{queue: -1, until: earliest}
}

// result records queue q's answer of n messages at now.
func (s *scheduler) result(q, n int, now time.Time) {
	if n > 0 {
		s.empty[q] = false
		s.backoff[q] = 0
		s.due[q] = now
		s.idle = false
		s.idleDelay = s.idleMin
		s.cursor = 0
		return
	}
	s.empty[q] = true
	s.cursor = (q + 1) % len(s.due)
	if s.idle {
		return // the idle long poll: the idle period governs
	}
	s.backoff[q] = min(max(2*s.backoff[q], s.backoffMin), s.backoffMax)
	s.due[q] = now.Add(s.backoff[q])
}

// failed records that queue q's receive failed: it backs off like an empty
// answer but does not count as one (an erroring queue is not known empty).
// It returns the backoff, which the caller sleeps when the failed receive
// was the idle long poll (the idle period would otherwise ask again at
// once).
func (s *scheduler) failed(q int, now time.Time) time.Duration {
	s.cursor = (q + 1) % len(s.due)
	s.backoff[q] = min(max(2*s.backoff[q], s.backoffMin), s.backoffMax)
	s.due[q] = now.Add(s.backoff[q])
	return s.backoff[q]
}

// paused records that queue q is paused: it has nothing for this worker,
// like an empty answer, and is looked at again after the shortest backoff
// (a pause is read from memory, so looking is free) without growing it.
func (s *scheduler) paused(q int, now time.Time) {
	s.empty[q] = true
	s.cursor = (q + 1) % len(s.due)
	s.due[q] = now.Add(s.backoffMin)
}
