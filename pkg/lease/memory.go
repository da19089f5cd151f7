package lease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// Memory is an in-process Lease for unit tests and the embedded dev mode.
type Memory struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[string]Holder
}

var _ Lease = (*Memory)(nil)

// NewMemory returns an empty Memory lease store on clk (the real clock when
// nil).
func NewMemory(clk clock.Clock) *Memory {
	return &Memory{clk: clock.Or(clk), m: map[string]Holder{}}
}

// Acquire implements Lease.
func (l *Memory) Acquire(ctx context.Context, name string, holder Holder, ttl time.Duration) (bool, Holder, error) {
	if err := checkArgs(name, holder.ID, ttl, true); err != nil {
		return false, Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return false, Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	cur, ok := l.m[name]
	if ok && cur.ID != holder.ID && !expired(cur.Expires, now) {
		return false, cur, nil
	}
	holder.Acquired = now.UTC().Truncate(time.Second)
	holder.Expires = expiry(now, ttl).UTC()
	l.m[name] = holder
	return true, holder, nil
}

// Renew implements Lease.
func (l *Memory) Renew(ctx context.Context, name, holderID string, ttl time.Duration) (Holder, error) {
	if err := checkArgs(name, holderID, ttl, true); err != nil {
		return Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.m[name]
	if !ok || cur.ID != holderID {
		return Holder{}, fmt.Errorf("lease: renew %q: %w", name, ErrNotHeld)
	}
	cur.Expires = expiry(l.clk.Now(), ttl).UTC()
	l.m[name] = cur
	return cur, nil
}

// Release implements Lease.
func (l *Memory) Release(ctx context.Context, name, holderID string) error {
	if err := checkArgs(name, holderID, 0, false); err != nil {
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.m[name]
	if !ok || cur.ID != holderID {
		return fmt.Errorf("lease: release %q: %w", name, ErrNotHeld)
	}
	delete(l.m, name)
	return nil
}
