package workman

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

func TestAnswerLatencySettleWait(t *testing.T) {
	const limit = time.Second
	a := newAnswerLatency()
	wait, changed := a.settleWait(limit)
	if wait != limit {
		t.Errorf("before any answer: settle wait %v, want the limit %v", wait, limit)
	}
	a.observe(30 * time.Millisecond)
	select {
	case <-changed:
	default:
		t.Error("a sample did not signal the waiters")
	}
	check := func(what string, want time.Duration) {
		t.Helper()
		if got, _ := a.settleWait(limit); got != want {
			t.Errorf("%s: settle wait %v, want %v", what, got, want)
		}
	}
	check("one 30 ms answer", settleFactor*30*time.Millisecond)
	a.observe(5 * time.Millisecond)
	check("the slowest recent answer counts", settleFactor*30*time.Millisecond)
	a.observe(600 * time.Millisecond)
	check("a slow answer is capped by the limit", limit)
	for range latencySamples {
		a.observe(time.Millisecond)
	}
	check("old answers are forgotten; the floor", settleFloor)
}

// testRTT is the round trip of rttHarness's receives.
const testRTT = 20 * time.Millisecond

// rttHarness: six queues whose receives take testRTT, 20 tasks on the
// fifth, and a recorder of the starts.
func rttHarness(t *testing.T) (*harness, *recorder) {
	r := &recorder{}
	h := newHarness(t, harnessOpts{queues: 6, handler: r, latency: func(int) time.Duration { return testRTT }})
	r.clk = h.clk
	h.put(4, tasks("low", 20)...)
	return h, r
}

// TestStartSettlesWithinRoundTrips: six queues whose receives take 20 ms,
// work only on the fifth. Its first message waits for the empty queues
// above to answer; their long polls count as empty after a few round trips
// (the first answer shows what one takes), not after ReceiveWait.
func TestStartSettlesWithinRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, r := rttHarness(t)
		start := h.clk.Now()
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(r.get()) > 0 }) {
			t.Fatal("nothing ran")
		}
		lat := r.get()[0].at.Sub(start)
		bound := settleFactor*testRTT + testRTT
		t.Logf("first task started %v after start (round trip %v, ReceiveWait %v)", lat, testRTT, DefaultReceiveWait)
		if lat > bound {
			t.Errorf("the first task started %v after start, want within %v (a few round trips)", lat, bound)
		}
	})
}

// slowHigher runs 30 one-second tasks on the second and the fifth of six
// queues, the second queue's receives taking high and the others' 20 ms,
// and returns how many of the fifth queue's tasks started before the second
// queue's first and before its last.
func slowHigher(t *testing.T, high time.Duration) (beforeFirst, beforeLast int) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return time.Second }),
			latency: func(q int) time.Duration {
				if q == 1 {
					return high
				}
				return 20 * time.Millisecond
			}})
		c.clk = h.clk
		h.put(1, tasks("high", 30)...)
		h.put(4, tasks("low", 30)...)
		h.start()
		if !h.advanceUntil(10*time.Minute, func() bool { return len(c.get()) == 60 }) {
			t.Fatalf("ran %d of 60", len(c.get()))
		}
		var first, last time.Time
		for _, x := range c.get() {
			if x.queue == "q1" {
				if first.IsZero() || x.at.Before(first) {
					first = x.at
				}
				if x.at.After(last) {
					last = x.at
				}
			}
		}
		for _, x := range c.get() {
			if x.queue == "q4" && x.at.Before(first) {
				beforeFirst++
			}
			if x.queue == "q4" && x.at.Before(last) {
				beforeLast++
			}
		}
	})
	return beforeFirst, beforeLast
}

// TestSlowerHigherQueueKeepsPriority: the second queue answers three times
// slower than the fifth (within the settle factor): every one of its tasks
// still starts before the fifth queue's first.
func TestSlowerHigherQueueKeepsPriority(t *testing.T) {
	if _, n := slowHigher(t, 60*time.Millisecond); n != 0 {
		t.Errorf("%d low tasks started before the high queue's last, want none", n)
	}
}

// TestMuchSlowerHigherQueueCostsOneWave documents the trade-off: a higher
// queue answering more than settleFactor times slower than the recent
// answers counts as empty before it answers, so the lower queue's work
// starts meanwhile — with 1 s tasks and a 500 ms answer, one task per
// worker — and what the lower queue already holds then (at most one batch
// beyond the busy workers) still runs, as when a message arrives on a
// higher queue while a lower one is busy.
func TestMuchSlowerHigherQueueCostsOneWave(t *testing.T) {
	first, last := slowHigher(t, 500*time.Millisecond)
	t.Logf("%d low tasks started before the slow high queue's first, %d before its last", first, last)
	if first > 4 || last > 4+queue.MaxBatch {
		t.Errorf("%d low tasks started before the high queue's first and %d before its last, want at most one per worker (4) and one batch more (%d)",
			first, last, 4+queue.MaxBatch)
	}
}

// TestIdleToBusySettlesFromEarlierAnswers: after a busy spell and an idle
// one, a message arrives on the second queue while the idle rotation's long
// poll on it has been waiting for seconds. That answer says nothing about
// round trips (it waited for the message), so the top queue's poll settles
// after a few of the busy spell's round trips and the message starts within
// them, not after ReceiveWait.
func TestIdleToBusySettlesFromEarlierAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, r := rttHarness(t)
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(r.get()) == 20 }) {
			t.Fatalf("ran %d of 20", len(r.get()))
		}
		h.advance(3 * time.Minute)
		// Wait until the rotation's poll on q1 has been out 2 s.
		watching := func() bool {
			var last time.Time
			lastQ := -1
			for i, rq := range h.recs {
				if ts := rq.receives(); len(ts) > 0 && !ts[len(ts)-1].Before(last) {
					last, lastQ = ts[len(ts)-1], i
				}
			}
			return lastQ == 1 && h.clk.Now().Sub(last) >= 2*time.Second
		}
		if !h.advanceUntil(10*time.Minute, watching) {
			t.Fatal("the idle rotation never watched q1")
		}
		h.put(1, noopTask("urgent"))
		if !h.advanceUntil(time.Minute, func() bool { return len(r.get()) == 21 }) {
			t.Fatal("the message on q1 did not run")
		}
		ans := h.recs[1].answered()
		lat := r.get()[20].at.Sub(ans[len(ans)-1])
		bound := settleFactor*testRTT + testRTT
		t.Logf("round trip %v: started %v after it was received", testRTT, lat)
		if lat > bound {
			t.Errorf("the message started %v after it was received, want within %v", lat, bound)
		}
	})
}
