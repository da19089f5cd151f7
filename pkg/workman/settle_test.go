package workman

import (
	"testing"
	"testing/synctest"
	"time"
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

// firstStart returns the fake time of the first call from queue q, and how
// many calls from other queues came before it.
func firstStart(calls []call, q string) (time.Time, int) {
	for i, c := range calls {
		if c.queue == q {
			return c.at, i
		}
	}
	return time.Time{}, len(calls)
}

// TestStartSettlesWithinRoundTrips: six queues whose receives take 20 ms,
// work only on the fifth. Its first message waits for the empty queues
// above to answer; their long polls count as empty after a few round trips
// (the first answer shows what one takes), not after ReceiveWait.
func TestStartSettlesWithinRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 20 * time.Millisecond
		r := &recorder{}
		h := newHarness(t, harnessOpts{queues: 6, handler: r, latency: func(int) time.Duration { return rtt }})
		r.clk = h.clk
		h.put(4, tasks("low", 20)...)
		start := h.clk.Now()
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(r.get()) > 0 }) {
			t.Fatal("nothing ran")
		}
		lat := r.get()[0].at.Sub(start)
		bound := settleFactor*rtt + rtt
		t.Logf("first task started %v after start (round trip %v, ReceiveWait %v)", lat, rtt, DefaultReceiveWait)
		if lat > bound {
			t.Errorf("the first task started %v after start, want within %v (a few round trips)", lat, bound)
		}
	})
}

// TestSlowerHigherQueueKeepsPriority: the second queue answers three times
// slower than the fifth (within the settle factor): every one of its tasks
// still starts before the fifth queue's first.
func TestSlowerHigherQueueKeepsPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		h := newHarness(t, harnessOpts{queues: 6, handler: r, latency: func(q int) time.Duration {
			if q == 1 {
				return 60 * time.Millisecond
			}
			return 20 * time.Millisecond
		}})
		r.clk = h.clk
		h.put(1, tasks("high", 30)...)
		h.put(4, tasks("low", 30)...)
		h.start()
		if !h.advanceUntil(10*time.Minute, func() bool { return len(r.get()) == 60 }) {
			t.Fatalf("ran %d of 60", len(r.get()))
		}
		if _, before := firstStart(r.get(), "q4"); before != 30 {
			t.Errorf("the low queue's first task started after %d of the high queue's 30, want after all of them", before)
		}
	})
}

// TestMuchSlowerHigherQueueCostsOneWave documents the trade-off: a higher
// queue answering more than settleFactor times slower than the recent
// answers counts as empty before it answers, so the lower queue's work
// starts meanwhile — with 1 s tasks and a 500 ms answer, at most one task
// per worker — and priority holds from its answer on.
func TestMuchSlowerHigherQueueCostsOneWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &completions{}
		h := newHarness(t, harnessOpts{queues: 6, handler: c.sleeper(func(string) time.Duration { return time.Second }),
			latency: func(q int) time.Duration {
				if q == 1 {
					return 500 * time.Millisecond
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
		calls := c.get()
		highAt, _ := firstStart(calls, "q1")
		early := 0
		for _, x := range calls {
			if x.queue == "q4" && x.at.Before(highAt) {
				early++
			}
		}
		t.Logf("%d low tasks started before the slow high queue's first", early)
		if early > 4 {
			t.Errorf("%d low tasks started before the high queue's first, want at most one per worker (4)", early)
		}
	})
}

// TestIdleToBusySettlesFromEarlierAnswers: after a busy spell and an idle
// one, a message arrives on the second queue while the idle rotation's long
// poll on it has been waiting for seconds. That answer says nothing about
// round trips (it waited for the message), so the top queue's poll settles
// after a few of the busy spell's round trips and the message starts within
// them, not after ReceiveWait.
func TestIdleToBusySettlesFromEarlierAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 20 * time.Millisecond
		r := &recorder{}
		h := newHarness(t, harnessOpts{queues: 6, handler: r, latency: func(int) time.Duration { return rtt }})
		r.clk = h.clk
		h.put(4, tasks("low", 20)...)
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
		bound := settleFactor*rtt + rtt
		t.Logf("round trip %v: started %v after it was received", rtt, lat)
		if lat > bound {
			t.Errorf("the message started %v after it was received, want within %v", lat, bound)
		}
	})
}
