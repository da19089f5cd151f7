package aimd

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder collects the changes a Limiter reports.
type recorder struct {
	mu sync.Mutex
	cs []Change
}

func (r *recorder) add(c Change) { r.mu.Lock(); r.cs = append(r.cs, c); r.mu.Unlock() }
func (r *recorder) kinds() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, c := range r.cs {
		m[c.Kind]++
	}
	return m
}

// floor throttles a fresh key and lets the span its first limit is
// measured over pass without a success: the limit is Min, in slow start.
func floor(l *Limiter, key string) {
	l.Observe(key, true)
	time.Sleep(measure)
	l.Limit(key)
}

func TestUnlimitedUntilThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{})
		start := time.Now()
		for range 1000 {
			if err := l.Wait(context.Background(), "a"); err != nil {
				t.Fatal(err)
			}
			l.Observe("a", false)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("1000 requests to an unthrottled key waited %v", d)
		}
		if got := l.Limit("a"); got != 0 {
			t.Errorf("limit %v, want unlimited", got)
		}
	})
}

func TestFirstThrottleSetsLimitFromSuccessRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := New(Config{OnChange: rec.add})
		// 100 successes a second for two seconds, then a throttle.
		for range 200 {
			l.Observe("hot", false)
			time.Sleep(10 * time.Millisecond)
		}
		l.Observe("hot", true)
		if got := l.Limit("hot"); math.Abs(got-85) > 5 {
			t.Errorf("limit after the first throttle %v, want about 0.85×100", got)
		}
		if got := l.Limit("cold"); got != 0 {
			t.Errorf("another key has limit %v, want unlimited", got)
		}
		if k := rec.kinds(); k[KindDecrease] != 1 {
			t.Errorf("changes %v, want one decrease", k)
		}
	})
}

func TestPacesAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Min: 10, Interval: time.Hour}) // no increase
		floor(l, "k")                                  // no successes: the floor, 10/s
		if got := l.Limit("k"); got != 10 {
			t.Fatalf("limit %v, want 10", got)
		}
		start := time.Now()
		for range 21 {
			if err := l.Wait(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("21 turns at 10/s took %v, want 2s", d)
		}
		// Another key is not held back.
		start = time.Now()
		for range 100 {
			_ = l.Wait(context.Background(), "other")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("another key waited %v", d)
		}
	})
}

func TestCooldownMakesOneDecreaseOfABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Min: 1})
		for range 100 {
			l.Observe("k", false)
		}
		time.Sleep(time.Second)
		l.Observe("k", true)
		first := l.Limit("k")
		for range 50 { // in-flight requests throttled by the same overshoot
			l.Observe("k", true)
		}
		if got := l.Limit("k"); got != first {
			t.Errorf("a burst of throttles within the cooldown: limit %v, want %v", got, first)
		}
		time.Sleep(time.Second)
		l.Observe("k", true)
		if got, want := l.Limit("k"), first*0.85; math.Abs(got-want) > 1e-9 {
			t.Errorf("after the cooldown: limit %v, want %v", got, want)
		}
	})
}

func TestIncreasesOnlyWhileHoldingBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := New(Config{Min: 10, Step: 2, OnChange: rec.add})
		floor(l, "k")
		time.Sleep(time.Second)
		l.Observe("k", true) // a second throttle ends the slow start
		// Idle for 5 s: the limit was not binding, nothing to raise.
		time.Sleep(5 * time.Second)
		if got := l.Limit("k"); got != 10 {
			t.Fatalf("limit after an idle spell %v, want 10", got)
		}
		// Busy for 5 s (requests wait their turn): +2 a second.
		ctx := context.Background()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if err := l.Wait(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			l.Observe("k", false)
		}
		got := l.Limit("k")
		if got < 16 || got > 20 {
			t.Errorf("limit after 5 busy seconds %v, want 10 + about 4 steps of 2", got)
		}
		if rec.kinds()[KindIncrease] == 0 {
			t.Error("no increase reported")
		}
	})
}

func TestForgetsAfterQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := New(Config{Forget: time.Minute, OnChange: rec.add})
		l.Observe("k", true)
		time.Sleep(59 * time.Second)
		if l.Limit("k") == 0 {
			t.Fatal("forgotten too early")
		}
		time.Sleep(time.Second)
		if got := l.Limit("k"); got != 0 {
			t.Errorf("limit %v a minute after the last throttle, want unlimited", got)
		}
		if rec.kinds()[KindReset] != 1 {
			t.Errorf("changes %v, want one reset", rec.kinds())
		}
	})
}

func TestTurnBeyondMaxWaitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Min: 1, MaxWait: 3 * time.Second, Interval: time.Hour})
		floor(l, "k") // 1/s
		ctx := context.Background()
		for range 4 { // turns at 0, 1, 2, 3 s
			if err := l.Wait(ctx, "k"); err != nil {
				t.Fatal(err)
			}
		}
		// Sequential waits took 3 s; the next turn is 1 s away: allowed.
		// Queue more from concurrent callers until one is refused.
		var mu sync.Mutex
		var refused *ThrottledError
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				err := l.Wait(ctx, "k")
				var te *ThrottledError
				if errors.As(err, &te) {
					mu.Lock()
					refused = te
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if refused == nil {
			t.Fatal("no turn refused")
		}
		key, in := refused.Throttled()
		if key != "k" || in <= 3*time.Second {
			t.Errorf("refused %q, retry in %v; want k, beyond 3s", key, in)
		}
	})
}

// store accepts rate requests a second (a token bucket of burst, by
// default one second's) and throttles the rest, as S3 does on a hot
// prefix.
type store struct {
	mu     sync.Mutex
	rate   float64
	burst  float64 // 0: rate
	tokens float64
	last   time.Time
	ok     int
	no     int // throttled
}

func (s *store) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	burst := s.burst
	if burst == 0 {
		burst = s.rate
	}
	s.tokens = min(burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
	s.last = now
	if s.tokens < 1 {
		s.no++
		return false
	}
	s.tokens--
	s.ok++
	return true
}

// hammer starts workers sending requests to key "hot" of st as fast as
// l gives them turns (a refused turn: back when it says) until ctx ends;
// an accepted request is answered after okRTT, a throttled one after
// noRTT. It returns a wait for the workers.
func hammer(ctx context.Context, l *Limiter, st *store, workers int, okRTT, noRTT time.Duration) (wait func()) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := l.Wait(ctx, "hot"); err != nil {
					var te *ThrottledError
					if errors.As(err, &te) {
						time.Sleep(te.RetryIn)
					}
					continue
				}
				ok := st.take()
				if ok {
					time.Sleep(okRTT)
				} else {
					time.Sleep(noRTT)
				}
				l.Observe("hot", !ok)
			}
		})
	}
	return wg.Wait
}

// TestConvergesNearTheAcceptedRate: 16 workers as fast as they may against
// a store that accepts 50 requests a second: after the limit has settled,
// the requests accepted run at 0.85..1 of that rate.
func TestConvergesNearTheAcceptedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 50.0
		st := &store{rate: rate, last: time.Now(), tokens: rate}
		l := New(Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 130*time.Second)
		defer cancel()
		var measured int
		wait := hammer(ctx, l, st, 16, 20*time.Millisecond, 20*time.Millisecond)
		time.Sleep(10 * time.Second) // settle
		st.mu.Lock()
		base, baseNo := st.ok, st.no
		st.mu.Unlock()
		time.Sleep(120 * time.Second)
		st.mu.Lock()
		measured = st.ok - base
		throttled := st.no - baseNo
		st.mu.Unlock()
		cancel()
		wait()
		ratio := float64(measured) / 120 / rate
		t.Logf("accepted %.1f requests/s of %v allowed: %.3f", float64(measured)/120, rate, ratio)
		if ratio < 0.9 || ratio > 1.01 {
			t.Errorf("achieved %.3f of the accepted rate, want 0.9..1", ratio)
		}
		// Unpaced, 16 workers at 20 ms would offer 800/s: 15 of 16
		// throttled. Paced, few are.
		if frac := float64(throttled) / float64(measured+throttled); frac > 0.1 {
			t.Errorf("%.2f of the requests were throttled (%d), want at most 0.1", frac, throttled)
		} else {
			t.Logf("%d requests throttled (%.3f)", throttled, frac)
		}
	})
}

// TestWorkWithATurnWaitsLonger: a request of work that has had a turn of
// the key waits up to Patience·MaxWait; fresh work is refused beyond
// MaxWait.
func TestWorkWithATurnWaitsLonger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Min: 1, MaxWait: 2 * time.Second, Interval: time.Hour})
		floor(l, "k") // 1/s
		task := WithTurns(context.Background())
		if err := l.Wait(task, "k"); err != nil { // its first turn, now
			t.Fatal(err)
		}
		for range 2 { // others take the turns at 1 and 2 s
			go func() { _ = l.Wait(context.Background(), "k") }()
		}
		synctest.Wait()
		// The next turn is 3 s away: fresh work is refused…
		var te *ThrottledError
		if err := l.Wait(context.Background(), "k"); !errors.As(err, &te) {
			t.Fatalf("fresh work 3 s from its turn: %v, want refused", err)
		}
		// …the task that had a turn waits for it.
		start := time.Now()
		if err := l.Wait(task, "k"); err != nil {
			t.Fatalf("work with a turn: %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("waited %v, want 3s", d)
		}
	})
}

// TestSlowStartDoublesUntilThrottled: a first limit set before any
// request succeeded doubles each busy interval until the next throttle,
// then climbs by steps.
func TestSlowStartDoublesUntilThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Step: 1})
		floor(l, "k") // no success seen: the floor, 1/s
		ctx := context.Background()
		busy := func(d time.Duration) {
			end := time.Now().Add(d)
			for time.Now().Before(end) {
				_ = l.Wait(ctx, "k")
				l.Observe("k", false)
			}
		}
		busy(4 * time.Second)
		if got := l.Limit("k"); got < 8 || got > 16 {
			t.Fatalf("limit after 4 busy seconds of slow start %v, want 8..16", got)
		}
		l.Observe("k", true)
		after := l.Limit("k")
		busy(3 * time.Second)
		if got := l.Limit("k"); got < after+1 || got > after+3 {
			t.Errorf("after the throttle the limit went from %v to %v in 3 s, want steps of 1", after, got)
		}
	})
}

// TestStaleThrottleLowersNothing: a throttle of a request sent before the
// limit fell (in flight at the old rate) does not lower it again; one
// sent at the new limit does.
func TestStaleThrottleLowersNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Interval: time.Hour})
		for range 200 {
			l.Observe("k", false)
			time.Sleep(10 * time.Millisecond)
		}
		sent := time.Now()
		l.ObserveSent("k", true, sent)
		first := l.Limit("k")
		time.Sleep(5 * time.Second)
		l.ObserveSent("k", true, sent.Add(-time.Second)) // sent before the cut
		if got := l.Limit("k"); got != first {
			t.Fatalf("a stale throttle moved the limit from %v to %v", first, got)
		}
		l.ObserveSent("k", true, time.Now()) // sent at the new limit
		if got, want := l.Limit("k"), first*0.85; math.Abs(got-want) > 1e-9 {
			t.Fatalf("limit %v after a fresh throttle, want %v", got, want)
		}
	})
}

// TestColdStoreThrottlingAtOnce: a store that throttles a key's first
// requests (a burst of 5 at 50 a second, its SlowDown answered before
// any accepted request has come back) is limited near the rate it
// accepts within its first seconds, not from the floor: 10 s of 24
// workers reach at least 0.85 of the rate.
func TestColdStoreThrottlingAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 50.0
		st := &store{rate: rate, burst: 5, last: time.Now(), tokens: 5}
		l := New(Config{MaxWait: 2 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Stored in 20 ms; refused at the door in 2.
		hammer(ctx, l, st, 24, 20*time.Millisecond, 2*time.Millisecond)()
		st.mu.Lock()
		ok := st.ok
		st.mu.Unlock()
		ratio := float64(ok) / 10 / rate
		t.Logf("accepted %d in 10 s: %.3f of the rate; limit %.1f", ok, ratio, l.Limit("hot"))
		if ratio < 0.85 {
			t.Errorf("achieved %.3f of the accepted rate in the first 10 s, want at least 0.85", ratio)
		}
		if got := l.Limit("hot"); got < 0.8*rate || got > 1.2*rate {
			t.Errorf("limit after 10 s %.1f, want near %v", got, rate)
		}
	})
}

// TestThrottleBeforeAMeasureWaitsForIt: a key throttled before a second
// of its answers was counted stays unlimited for that second, then is
// limited from the rate measured over it; a throttle of a key nobody
// used since, for Forget, sets no limit at all.
func TestThrottleBeforeAMeasureWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := New(Config{Forget: time.Minute, OnChange: rec.add})
		l.Observe("k", true)
		if got := l.Limit("k"); got != 0 {
			t.Fatalf("limit %v before any rate was measured, want unlimited", got)
		}
		for range 40 { // 40 successes in the second
			time.Sleep(25 * time.Millisecond)
			l.Observe("k", false)
		}
		if got := l.Limit("k"); math.Abs(got-0.85*40) > 2 {
			t.Errorf("limit %v after a second of 40 successes, want about 0.85×40", got)
		}
		l.Observe("idle", true)
		time.Sleep(time.Minute)
		if got := l.Limit("idle"); got != 0 {
			t.Errorf("limit %v from a throttle a minute old, want unlimited", got)
		}
		if got := rec.kinds(); got[KindDecrease] != 1 || got[KindReset] != 0 {
			t.Errorf("changes %v, want the one decrease of k", got)
		}
	})
}
