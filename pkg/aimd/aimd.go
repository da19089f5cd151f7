// Package aimd paces the requests a process sends to each store (an S3
// bucket, a DynamoDB table, an SNS topic) with an additive-increase /
// multiplicative-decrease limit that it learns from the store's
// throttling answers, so a throttled store gets the rate it accepts and
// every other store keeps full speed.
//
// A Limiter keeps one limit per key. A key is unlimited until a request to
// it is throttled (Observe with throttled true). The first throttle sets
// its limit to Decrease times the rate at which its requests succeeded
// over the last one to two seconds (the rate the store accepted, not the
// rate that was offered). A key throttled before a second of its answers
// has been counted (a store throttling from its first requests, or after
// a quiet spell) stays unlimited until that second is over, and its
// first limit is then measured from it: a rate measured over the first
// moments, when a SlowDown comes back before any accepted request, is
// nothing (measured so, a store of 50 requests a second was limited to
// 1, and it took the slow start 8 s to climb back). When no request
// succeeded in that second, the first limit is Min and doubles each
// Interval in which it held a request back until the next throttle (a
// slow start). Every later throttle multiplies the limit by Decrease, at
// most once per Cooldown (the throttles of requests already in flight
// when the limit fell are one signal, not many); a throttle of a request
// sent before the limit last fell lowers nothing (ObserveSent). Each
// Interval without a throttle in which the limit held a request back
// raises it by Step (Config.Step: by default 2 % of the limit at the last
// decrease, at least Min, so a cut of 15 % is won back in about 8
// intervals at any scale). A key not throttled for Forget is unlimited
// again. With the defaults the limit saws between 0.85 and 1 times the
// rate the store accepts: about 0.92 of it on average.
//
// Wait takes a request's turn: requests to a limited key are spaced
// 1/limit apart. A turn further away than MaxWait (Patience times that
// for work that has had a turn of the key: WithTurns) is not waited for:
// Wait returns a *ThrottledError saying when to come back, which the
// processors read as "release the task with that delay, without counting
// an attempt" (processors.IsThrottled). Every change of a limit is told to
// Config.OnChange (the metrics: pkg/metrics RateLimitRecorder).
package aimd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/clock"
)

// Changes of a limit, as Change.Kind.
const (
	KindDecrease = "decrease" // a throttle lowered it (or set the first limit)
	KindIncrease = "increase" // an interval without throttling raised it
	KindReset    = "reset"    // not throttled for Forget: unlimited again
)

// Change is one change of a key's limit.
type Change struct {
	Key  string
	Kind string
	// Limit is the new limit in requests per second; 0 means unlimited.
	Limit float64
}

// Config tunes a Limiter. The zero value is ready to use.
type Config struct {
	// Decrease multiplies the limit on a throttle (default 0.85).
	Decrease float64
	// Step is the additive increase per Interval, requests per second
	// (default: 2 % of the limit at the last decrease, at least Min).
	Step float64
	// Min is the lowest limit, requests per second (default 1).
	Min float64
	// Interval between increases (default 1 s); Cooldown between
	// decreases (default 1 s).
	Interval, Cooldown time.Duration
	// Forget: a key not throttled for this long is unlimited again
	// (default 5 min).
	Forget time.Duration
	// MaxWait is the longest turn Wait waits for (default 10 s).
	MaxWait time.Duration
	// OnChange is told every change of a limit; it must not block.
	OnChange func(Change)
	// Clock (default the real one).
	Clock clock.Clock
}

// defaultConfig holds the values withDefaults gives a Config's zero or
// negative fields.
var defaultConfig = Config{
	Decrease: 0.85, Min: 1,
	Interval: time.Second, Cooldown: time.Second,
	Forget: 5 * time.Minute, MaxWait: 10 * time.Second,
	Clock: clock.Real{},
}

func (c Config) withDefaults() Config {
	if c.Decrease >= 1 { // a Decrease that does not decrease: the default
		c.Decrease = defaultConfig.Decrease
	}
	defaults.FillNonPositive(&c, defaultConfig)
	return c
}

// ThrottledError says a request was not sent because its store's limit
// would have kept it waiting longer than MaxWait: come back after
// RetryIn. processors.IsThrottled reads it (its Throttled method).
type ThrottledError struct {
	Key     string
	Limit   float64
	RetryIn time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s throttled: limited to %.1f requests/s, next turn in %v", e.Key, e.Limit, e.RetryIn.Round(time.Millisecond))
}

// Throttled names the throttled store and when to come back.
func (e *ThrottledError) Throttled() (string, time.Duration) { return e.Key, e.RetryIn }

// Limiter keeps the limits. Safe for concurrent use.
type Limiter struct {
	cfg  Config
	mu   sync.Mutex
	keys map[string]*state
}

// state is one key's limit and its accounting.
type state struct {
	limit float64 // 0: unlimited
	step  float64
	next  time.Time // the next free turn (limited keys)
	// Successes counted in the current window (from winStart) and the one
	// before it (prevOK, over prevLen), for the first limit.
	winStart       time.Time
	ok, prevOK     int
	prevLen        time.Duration
	lastDecrease   time.Time
	lastThrottle   time.Time
	intervalStart  time.Time
	throttledInInt bool
	heldInInt      bool
	// pending: throttled before a rate was measured (a key throttling
	// from its first requests, or after a quiet spell); the first limit
	// is set once measure has passed.
	pending bool
	// slowStart: the first limit is the floor (no request succeeded in
	// the span measured); it doubles each interval until the next
	// throttle.
	slowStart bool
}

// New returns a Limiter.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg.withDefaults(), keys: map[string]*state{}}
}

// Limit returns key's limit in requests per second (0: unlimited).
func (l *Limiter) Limit(key string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.keys[key]; s != nil {
		l.tickLocked(key, s, l.cfg.Clock.Now())
		return s.limit
	}
	return 0
}

// Wait waits for the turn of a request to key: at once for an unlimited
// key; for a limited one, until 1/limit after the previous turn. A turn
// further than MaxWait away is not taken (*ThrottledError); ctx ending
// returns its error.
func (l *Limiter) Wait(ctx context.Context, key string) error {
	l.mu.Lock()
	s := l.keys[key]
	if s == nil {
		l.mu.Unlock()
		return ctx.Err()
	}
	now := l.cfg.Clock.Now()
	l.tickLocked(key, s, now)
	if s.limit == 0 {
		l.mu.Unlock()
		return ctx.Err()
	}
	turn := s.next
	if turn.Before(now) {
		turn = now
	}
	wait := turn.Sub(now)
	maxWait := l.cfg.MaxWait
	tu := turnsFrom(ctx)
	if tu.had(key) {
		maxWait *= Patience
	}
	if wait > maxWait {
		err := &ThrottledError{Key: key, Limit: s.limit, RetryIn: wait}
		l.mu.Unlock()
		return err
	}
	s.next = turn.Add(time.Duration(float64(time.Second) / s.limit))
	if wait > 0 {
		s.heldInInt = true
	}
	l.mu.Unlock()
	tu.add(key)
	return clock.Sleep(ctx, l.cfg.Clock, wait)
}

// Patience multiplies MaxWait for a request of a piece of work that has
// had a turn of the same key already (WithTurns): work half done is
// finished rather than given up and redone, which would spend the
// store's rate twice.
const Patience = 5

type turnsKey struct{}

// turns records the keys a piece of work had turns of.
type turns struct {
	mu   sync.Mutex
	keys map[string]bool
}

// WithTurns returns ctx for one piece of work (a task): a request of it
// to a key it has had a turn of waits up to Patience·MaxWait.
func WithTurns(ctx context.Context) context.Context {
	return context.WithValue(ctx, turnsKey{}, &turns{keys: map[string]bool{}})
}

func turnsFrom(ctx context.Context) *turns {
	t, _ := ctx.Value(turnsKey{}).(*turns)
	return t
}

func (t *turns) had(key string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys[key]
}

func (t *turns) add(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.keys[key] = true
	t.mu.Unlock()
}

// Observe records the answer to a request to key: throttled, or not
// (any other answer: the store took the request).
func (l *Limiter) Observe(key string, throttled bool) {
	l.ObserveSent(key, throttled, time.Time{})
}

// ObserveSent is Observe for a request sent at sent: a throttle of a
// request sent before the limit last fell says nothing of the new limit,
// and lowers nothing.
func (l *Limiter) ObserveSent(key string, throttled bool, sent time.Time) {
	var ch *Change
	l.mu.Lock()
	now := l.cfg.Clock.Now()
	s := l.keys[key]
	if s == nil {
		s = &state{winStart: now, intervalStart: now}
		l.keys[key] = s
	}
	l.tickLocked(key, s, now)
	if !throttled {
		s.ok++
		l.mu.Unlock()
		return
	}
	s.lastThrottle, s.throttledInInt = now, true
	stale := !sent.IsZero() && sent.Before(s.lastDecrease)
	switch {
	case s.limit == 0 && s.measured(now) < measure:
		s.pending = true // limited once a rate is measured (tickLocked)
	case s.limit == 0:
		ch = l.firstLimitLocked(key, s, now)
	case !stale && now.Sub(s.lastDecrease) >= l.cfg.Cooldown:
		s.limit = max(s.limit*l.cfg.Decrease, l.cfg.Min)
		s.slowStart = false
		ch = l.decreasedLocked(key, s, now)
	}
	l.mu.Unlock()
	l.tell(ch)
}

// measure is the span of successes the first limit is measured over.
const measure = time.Second

// firstLimitLocked sets key's first limit: Decrease times the rate its
// requests succeeded at, or, when none did, Min in slow start.
func (l *Limiter) firstLimitLocked(key string, s *state, now time.Time) *Change {
	s.limit = l.cfg.Decrease * s.successRate(now)
	s.slowStart = s.limit < l.cfg.Min
	s.limit = max(s.limit, l.cfg.Min)
	s.next, s.pending = now, false
	return l.decreasedLocked(key, s, now)
}

// decreasedLocked starts the accounting of a limit just lowered (or set).
func (l *Limiter) decreasedLocked(key string, s *state, now time.Time) *Change {
	s.step = l.cfg.Step
	if s.step <= 0 {
		s.step = max(0.02*s.limit, l.cfg.Min)
	}
	s.lastDecrease, s.intervalStart, s.throttledInInt, s.heldInInt = now, now, false, false
	return &Change{Key: key, Kind: KindDecrease, Limit: s.limit}
}

// measured is the span the success rate is counted over.
func (s *state) measured(now time.Time) time.Duration {
	return now.Sub(s.winStart) + s.prevLen
}

// successRate is the rate of the successes counted over the current and
// the previous window.
func (s *state) successRate(now time.Time) float64 {
	span := s.measured(now)
	if span < 100*time.Millisecond {
		span = 100 * time.Millisecond
	}
	return float64(s.ok+s.prevOK) / span.Seconds()
}

// tickLocked rolls key's windows to now: the success window, the
// increase interval, and forgetting.
func (l *Limiter) tickLocked(key string, s *state, now time.Time) {
	switch {
	case s.pending && now.Sub(s.lastThrottle) >= l.cfg.Forget:
		s.pending = false // a throttle long forgotten: no limit
	case s.pending && s.measured(now) >= measure:
		// Before the windows roll: a quiet spell counts in the rate.
		l.tell(l.firstLimitLocked(key, s, now))
	}
	if d := now.Sub(s.winStart); d >= time.Second {
		if d < 2*time.Second {
			s.prevOK, s.prevLen = s.ok, d
		} else {
			s.prevOK, s.prevLen = 0, 0
		}
		s.ok, s.winStart = 0, now
	}
	if s.limit == 0 {
		if now.Sub(s.winStart) > l.cfg.Forget && now.Sub(s.lastThrottle) > l.cfg.Forget {
			delete(l.keys, key) // an unlimited key nobody uses
		}
		return
	}
	if !s.lastThrottle.IsZero() && now.Sub(s.lastThrottle) >= l.cfg.Forget {
		s.limit = 0
		l.tellLater(Change{Key: key, Kind: KindReset})
		return
	}
	for now.Sub(s.intervalStart) >= l.cfg.Interval {
		if !s.throttledInInt && s.heldInInt {
			if s.slowStart {
				s.limit *= 2
			} else {
				s.limit += s.step
			}
			l.tellLater(Change{Key: key, Kind: KindIncrease, Limit: s.limit})
		}
		s.intervalStart = s.intervalStart.Add(l.cfg.Interval)
		s.throttledInInt, s.heldInInt = false, false
		if now.Sub(s.intervalStart) >= l.cfg.Interval {
			// Idle intervals raise nothing: skip them at once.
			s.intervalStart = now
		}
	}
}

// tellLater tells a change found under the lock; OnChange must not block,
// so calling it there is safe.
func (l *Limiter) tellLater(c Change) { l.tell(&c) }

func (l *Limiter) tell(c *Change) {
	if c != nil && l.cfg.OnChange != nil {
		l.cfg.OnChange(*c)
	}
}
