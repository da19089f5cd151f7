package policy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// DefaultRefresh is how long Cache trusts what it read.
const DefaultRefresh = 5 * time.Minute

// CacheConfig tunes a Cache. The zero value is ready to use.
type CacheConfig struct {
	// Refresh is how long an entry is served before it is read again
	// (default DefaultRefresh).
	Refresh time.Duration
	// Clock tells the time (default the system clock).
	Clock clock.Clock
	// Logger receives failed refreshes that were answered from the stale
	// entry (default slog.Default()).
	Logger *slog.Logger
}

// WithDefaults returns c with defaults filled in.
func (c CacheConfig) WithDefaults() CacheConfig {
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Cache is a Repository that keeps what another Repository answered for
// Refresh. A refresh that fails is answered from the stale entry (and
// logged) when there is one, so a brief S3 outage does not stop the
// producers; with no entry the error is returned. A missing policy is
// cached too. Put and Delete go through and drop the cached entries.
// Safe for concurrent use.
type Cache struct {
	repo Repository
	cfg  CacheConfig

	mu       sync.Mutex
	accounts *entry[[]string]
	policies map[string]*entry[*Policy]
}

type entry[T any] struct {
	v   T
	err error // ErrNotFound only; other errors are not cached
	at  time.Time
}

var _ Repository = (*Cache)(nil)

// NewCache returns a cache over repo.
func NewCache(repo Repository, cfg CacheConfig) *Cache {
	return &Cache{repo: repo, cfg: cfg.WithDefaults(), policies: map[string]*entry[*Policy]{}}
}

// Accounts implements Repository.
func (c *Cache) Accounts(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	e := c.accounts
	c.mu.Unlock()
	if e != nil && c.fresh(e.at) {
		return e.v, nil
	}
	now := c.cfg.Clock.Now()
	v, err := c.repo.Accounts(ctx)
	if err != nil {
		if e != nil {
			c.cfg.Logger.Warn("policy: refreshing the account list failed; using the cached one", "err", err, "age", now.Sub(e.at))
			return e.v, nil
		}
		return nil, err
	}
	c.mu.Lock()
	c.accounts = &entry[[]string]{v: v, at: now}
	c.mu.Unlock()
	return v, nil
}

// Policy implements Repository.
func (c *Cache) Policy(ctx context.Context, account string) (*Policy, error) {
	c.mu.Lock()
	e := c.policies[account]
	c.mu.Unlock()
	if e != nil && c.fresh(e.at) {
		return e.v, e.err
	}
	now := c.cfg.Clock.Now()
	v, err := c.repo.Policy(ctx, account)
	if err != nil && !errors.Is(err, ErrNotFound) {
		if e != nil {
			c.cfg.Logger.Warn("policy: refreshing a policy failed; using the cached one", "account", account, "err", err, "age", now.Sub(e.at))
			return e.v, e.err
		}
		return nil, err
	}
	c.mu.Lock()
	c.policies[account] = &entry[*Policy]{v: v, err: err, at: now}
	c.mu.Unlock()
	return v, err
}

// Put implements Repository.
func (c *Cache) Put(ctx context.Context, account string, p *Policy) error {
	defer c.Invalidate(account)
	return c.repo.Put(ctx, account, p)
}

// Delete implements Repository.
func (c *Cache) Delete(ctx context.Context, account string) error {
	defer c.Invalidate(account)
	return c.repo.Delete(ctx, account)
}

// Invalidate drops the account list and account's policy, so the next
// calls read them again.
func (c *Cache) Invalidate(account string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.accounts = nil
	delete(c.policies, account)
}

func (c *Cache) fresh(at time.Time) bool {
	return c.cfg.Clock.Now().Sub(at) < c.cfg.Refresh
}
