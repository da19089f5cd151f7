package workman

import (
	"context"
	"sync"
	"time"
)

// waker wakes a queue when work the manager sent it with a delay (a retry,
// a task released by an open circuit) comes due, so the idle rotation,
// which reaches a low queue only once per round of long polls, does not
// leave it waiting. The watch a wake starts answers as soon as one
// message is visible, and the batches that follow take what is visible
// by then: so due times are merged only when they fall within
// wakeMerge of one already kept for the queue, and the kept wake moves to
// the later time, so no task it covers is still delayed when it fires (a
// burst of retries sent over two seconds makes a few wakes, not one per
// retry).
// wakeMerge: a due time this close after one already kept is merged into
// that wake, which then fires at the later time.
const wakeMerge = 250 * time.Millisecond

type waker struct {
	m    *Manager
	mu   sync.Mutex
	due  map[int][]time.Time // queue → due times, ascending
	kick chan struct{}
}

func newWaker(m *Manager) *waker {
	return &waker{m: m, due: map[int][]time.Time{}, kick: make(chan struct{}, 1)}
}

// at records that queue i has work due at t.
func (w *waker) at(i int, t time.Time) {
	w.mu.Lock()
	ts := w.due[i]
	k := 0
	for k < len(ts) && !ts[k].After(t) {
		k++
	}
	if k > 0 && t.Sub(ts[k-1]) < wakeMerge {
		// Merged into the earlier wake, which moves to the later time: a
		// watch answers with what is visible when it starts, so a wake
		// before a task's due time would leave that task to the idle
		// rotation (seen in a CI run: 8 of 60 retries waited 80 s).
		ts[k-1] = t
		w.mu.Unlock()
		return
	}
	ts = append(ts, time.Time{})
	copy(ts[k+1:], ts[k:])
	ts[k] = t
	w.due[i] = ts
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run calls wake(i) for every due time as it comes, until ctx ends.
func (w *waker) run(ctx context.Context, wake func(i int)) {
	clk := w.m.clk
	for {
		now := clk.Now()
		var woken []int
		var next time.Time
		w.mu.Lock()
		for i, ts := range w.due {
			k := 0
			for k < len(ts) && !ts[k].After(now) {
				k++
			}
			if k > 0 {
				woken = append(woken, i)
			}
			if ts = ts[k:]; len(ts) == 0 {
				delete(w.due, i)
				continue
			}
			w.due[i] = ts
			if next.IsZero() || ts[0].Before(next) {
				next = ts[0]
			}
		}
		w.mu.Unlock()
		for _, i := range woken {
			wake(i)
		}
		var fire <-chan time.Time
		stop := func() bool { return false }
		if !next.IsZero() {
			t := clk.NewTimer(next.Sub(now))
			fire, stop = t.C(), t.Stop
		}
		select {
		case <-ctx.Done():
			stop()
			return
		case <-w.kick:
			stop()
		case <-fire:
		}
	}
}
