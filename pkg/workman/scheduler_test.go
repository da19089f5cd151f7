package workman

import (
	"testing"
	"time"
)

// TestSchedulerReachesLowQueueWhenPassesAreSlow: six queues, only the lowest
// has work, each empty receive takes longer than the per-queue backoff cap
// (a slow endpoint, or a short cap). Every pass must still reach the lowest
// queue, and once it answers with messages it is read again at once.
func TestSchedulerReachesLowQueueWhenPassesAreSlow(t *testing.T) {
	c := Config{QueueBackoffMin: 10 * time.Millisecond, QueueBackoffMax: 200 * time.Millisecond}.WithDefaults()
	s := newScheduler(6, c)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const slow = 300 * time.Millisecond // each receive's round trip
	low := 0
	for step := 0; step < 200; step++ {
		p := s.next(now)
		if p.queue < 0 {
			now = p.until
			continue
		}
		now = now.Add(slow)
		if p.queue == 5 {
			low++
			s.result(5, 10, now) // the low queue always has work
			continue
		}
		s.result(p.queue, 0, now)
	}
	// Strict priority re-asks the (due) higher queues after every
	// non-empty receive, so at best one pick in six reaches the lowest
	// queue here; restarting at the top after empty answers made it 0.
	if low < 200/6-3 {
		t.Fatalf("the busy lowest queue was read %d times in 200 picks (want about one per pass of 6); the empty higher queues starve it", low)
	}
}

// TestSchedulerPassGoesOnAfterEmpty: after an empty answer the next pick is
// the next due queue below it, not the top again.
func TestSchedulerPassGoesOnAfterEmpty(t *testing.T) {
	c := Config{}.WithDefaults()
	s := newScheduler(3, c)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var order []int
	for i := 0; i < 3; i++ {
		p := s.next(now)
		order = append(order, p.queue)
		now = now.Add(5 * time.Second) // longer than the first backoff
		s.result(p.queue, 0, now)
	}
	if order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("pass order %v, want [0 1 2]", order)
	}
	// A non-empty answer starts the search at the top again.
	s.result(2, 5, now)
	now = now.Add(time.Minute) // every backoff expired
	if p := s.next(now); p.queue != 0 && !p.idle {
		t.Fatalf("after messages the next pick is queue %d, want 0", p.queue)
	}
}
