package policy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// Defaults of CacheConfig.
const (
	// DefaultRefresh is how long Cache trusts what it read.
	DefaultRefresh = 5 * time.Minute
	// DefaultFailureRetry is how long Cache waits before reading again a
	// file whose read failed (the stale entry, or the failure, is served
	// meanwhile).
	DefaultFailureRetry = 30 * time.Second
	// DefaultLoadTimeout bounds one read of a file, whoever waits for it.
	DefaultLoadTimeout = time.Minute
)

// CacheConfig tunes a Cache. The zero value is ready to use.
type CacheConfig struct {
	// Refresh is how long an entry is served before it is read again
	// (default DefaultRefresh).
	Refresh time.Duration
	// FailureRetry is how long a failed read is remembered before the file
	// is read again (default DefaultFailureRetry, at most Refresh).
	FailureRetry time.Duration
	// LoadTimeout bounds one read (default DefaultLoadTimeout).
	LoadTimeout time.Duration
	// Clock tells the time (default the system clock).
	Clock clock.Clock
	// Logger receives failed refreshes that were answered from the stale
	// entry (default slog.Default()).
	Logger *slog.Logger
}

// defaultCacheConfig holds the values WithDefaults gives a CacheConfig's
// zero or negative fields.
var defaultCacheConfig = CacheConfig{Refresh: DefaultRefresh, FailureRetry: DefaultFailureRetry, LoadTimeout: DefaultLoadTimeout}

// WithDefaults returns c with defaults filled in.
func (c CacheConfig) WithDefaults() CacheConfig {
	defaults.FillNonPositive(&c, defaultCacheConfig)
	c.FailureRetry = min(c.FailureRetry, c.Refresh)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

// Cache is a Repository that keeps what another Repository answered for
// Refresh.
//
// Reads are single-flight: however many callers find an entry missing or
// stale at once, one read of the file is made and they all get its answer
// (a caller whose context ends stops waiting; the read goes on for the
// others, bounded by LoadTimeout). A missing policy is cached like a
// policy. A refresh that fails is answered from the stale entry (and
// logged) when there is one, so a brief S3 outage or a broken upload does
// not stop the mill; with no entry the error is returned, and a file that
// is there but unusable (over the size limit, invalid) is remembered as
// such. Either way the file is not read again before FailureRetry. Put and
// Delete go through and drop the cached entries. Safe for concurrent use.
type Cache struct {
	repo  Repository
	cfg   CacheConfig
	group singleflight.Group

	mu       sync.Mutex
	gen      uint64 // bumped by Invalidate: a read started before is not kept
	accounts *entry[[]string]
	policies map[string]*entry[*Policy]
}

type entry[T any] struct {
	v       T
	err     error // ErrNotFound, or a file that cannot be used
	expires time.Time
}

var _ Repository = (*Cache)(nil)

// NewCache returns a cache over repo.
func NewCache(repo Repository, cfg CacheConfig) *Cache {
	return &Cache{repo: repo, cfg: cfg.WithDefaults(), policies: map[string]*entry[*Policy]{}}
}

// Accounts implements Repository.
func (c *Cache) Accounts(ctx context.Context) ([]string, error) {
	return get(ctx, c, "accounts", "",
		func() *entry[[]string] { return c.accounts },
		func(e *entry[[]string]) { c.accounts = e },
		c.repo.Accounts)
}

// Policy implements Repository.
func (c *Cache) Policy(ctx context.Context, account string) (*Policy, error) {
	return get(ctx, c, "policy/"+account, account,
		func() *entry[*Policy] { return c.policies[account] },
		func(e *entry[*Policy]) { c.policies[account] = e },
		func(ctx context.Context) (*Policy, error) { return c.repo.Policy(ctx, account) })
}

// get answers from the entry load/store keep (under c.mu) while it is
// fresh, and otherwise reads it once for every caller waiting on key.
func get[T any](ctx context.Context, c *Cache, key, account string, load func() *entry[T], store func(*entry[T]), read func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	e := load()
	c.mu.Unlock()
	if e != nil && c.cfg.Clock.Now().Before(e.expires) {
		return e.v, e.err
	}
	ch := c.group.DoChan(key, func() (any, error) {
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.LoadTimeout)
		defer cancel()
		v, err := read(rctx)
		now := c.cfg.Clock.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		prev := load()
		var next *entry[T]
		switch {
		case err == nil || errors.Is(err, ErrNotFound):
			next = &entry[T]{v: v, err: err, expires: now.Add(c.cfg.Refresh)}
		case prev != nil && (prev.err == nil || errors.Is(prev.err, ErrNotFound)):
			c.cfg.Logger.Warn("policy: refreshing failed; using what was read before", "file", key, "account", account, "err", err)
			next = &entry[T]{v: prev.v, err: prev.err, expires: now.Add(c.cfg.FailureRetry)}
		case unusable(err):
			next = &entry[T]{err: err, expires: now.Add(c.cfg.FailureRetry)}
		case prev != nil: // still unusable as far as we know
			next = &entry[T]{err: prev.err, expires: now.Add(c.cfg.FailureRetry)}
		default: // a transient failure with nothing to fall back on
			return nil, err
		}
		if gen == c.gen {
			store(next)
		}
		return next, nil
	})
	select {
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			var zero T
			return zero, r.Err
		}
		e := r.Val.(*entry[T])
		return e.v, e.err
	}
}

// unusable reports whether err says the file is there but cannot be used
// (too large, not valid) — an answer to remember, not a service failing.
func unusable(err error) bool {
	var pe *jsonpos.Error
	return errors.Is(err, jsonpos.ErrTooLarge) || errors.As(err, &pe)
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
// calls read them again (a read already under way is not kept).
func (c *Cache) Invalidate(account string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.accounts = nil
	delete(c.policies, account)
	c.group.Forget("accounts")
	c.group.Forget("policy/" + account)
}
