package memlease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"

	"github.com/millfleet/mill/pkg/lease"
)

// Lease is an in-process lease.Lease for unit tests and the embedded dev mode.
type Lease struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[string]lease.Holder
}

var _ lease.Lease = (*Lease)(nil)

// New returns an empty in-memory lease store on clk (the real clock when
// nil).
func New(clk clock.Clock) *Lease {
	return &Lease{clk: clock.Or(clk), m: map[string]lease.Holder{}}
}

// Acquire implements lease.Lease.
func (l *Lease) Acquire(ctx context.Context, name string, holder lease.Holder, ttl time.Duration) (bool, lease.Holder, error) {
	if err := lease.CheckArgs(name, holder.ID, ttl, true); err != nil {
		return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	cur, ok := l.m[name]
	if ok && cur.ID != holder.ID && !lease.Expired(cur.Expires, now) {
		return false, cur, nil
	}
	holder.Acquired = now.UTC().Truncate(time.Second)
	holder.Expires = lease.Expiry(now, ttl).UTC()
	l.m[name] = holder
	return true, holder, nil
}

// Renew implements lease.Lease.
func (l *Lease) Renew(ctx context.Context, name, holderID string, ttl time.Duration) (lease.Holder, error) {
	if err := lease.CheckArgs(name, holderID, ttl, true); err != nil {
		return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.m[name]
	if !ok || cur.ID != holderID {
		return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, lease.ErrNotHeld)
	}
	cur.Expires = lease.Expiry(l.clk.Now(), ttl).UTC()
	l.m[name] = cur
	return cur, nil
}

// Release implements lease.Lease.
func (l *Lease) Release(ctx context.Context, name, holderID string) error {
	if err := lease.CheckArgs(name, holderID, 0, false); err != nil {
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.m[name]
	if !ok || cur.ID != holderID {
		return fmt.Errorf("lease: release %q: %w", name, lease.ErrNotHeld)
	}
	delete(l.m, name)
	return nil
}
