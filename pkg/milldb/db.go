package milldb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/base/validate"
)

// Defaults for Config.
const (
	// DefaultMaxConns bounds the pool when neither Config.MaxConns nor the
	// URL's pool_max_conns sets it.
	DefaultMaxConns = 10
	// DefaultConnectTimeout bounds establishing one connection when neither
	// Config.ConnectTimeout nor the URL's connect_timeout sets it: short, so
	// a server that cannot be reached is said at once (UnreachableError).
	DefaultConnectTimeout = 5 * time.Second
	// DefaultMaxConnLifetime recycles connections so server-side changes
	// (failover, parameter changes) are picked up.
	DefaultMaxConnLifetime = 30 * time.Minute
	// DefaultMaxConnIdleTime closes connections idle this long.
	DefaultMaxConnIdleTime = 5 * time.Minute
	// DefaultApplicationName is reported to the server (pg_stat_activity).
	DefaultApplicationName = "mill"
)

// Config tunes Open. The zero value is ready to use: every zero field takes
// its default, except where the database URL itself sets the value
// (pool_max_conns, pool_min_conns, connect_timeout, application_name, …),
// which then wins over the default but not over a non-zero field here.
type Config struct {
	// MaxConns is the pool size (default DefaultMaxConns).
	MaxConns int32
	// MinConns kept open (default 0).
	MinConns int32
	// ConnectTimeout bounds one connection attempt (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// MaxConnLifetime (default DefaultMaxConnLifetime).
	MaxConnLifetime time.Duration
	// MaxConnIdleTime (default DefaultMaxConnIdleTime).
	MaxConnIdleTime time.Duration
	// ApplicationName (default DefaultApplicationName).
	ApplicationName string
	// Tracer, when set, traces every query (pgx's ConnConfig.Tracer;
	// telemetry.Tracing.PGX).
	Tracer pgx.QueryTracer
}

func (c Config) validate() error {
	p := validate.Struct("milldb: Config", c)
	p.Check(c.MaxConns >= 0, "MaxConns", c.MaxConns, "not be negative")
	p.Check(c.MinConns >= 0, "MinConns", c.MinConns, "not be negative")
	p.Check(c.MaxConns == 0 || c.MinConns <= c.MaxConns, "MinConns", c.MinConns, "not exceed MaxConns %d", c.MaxConns)
	p.Check(c.ConnectTimeout >= 0, "ConnectTimeout", c.ConnectTimeout, "not be negative")
	p.Check(c.MaxConnLifetime >= 0, "MaxConnLifetime", c.MaxConnLifetime, "not be negative")
	p.Check(c.MaxConnIdleTime >= 0, "MaxConnIdleTime", c.MaxConnIdleTime, "not be negative")
	return p.Err()
}

// DB is an open connection pool.
type DB struct {
	// Pool is the underlying pgx pool; the migration functions and the
	// PostgreSQL implementations of the ports (pgbitlog, pgcontentindex,
	// pgspacestats) take it.
	Pool *pgxpool.Pool
}

// Close closes every connection of the pool. Safe to call more than once.
func (db *DB) Close() {
	if db != nil && db.Pool != nil {
		db.Pool.Close()
	}
}

// PoolConfig parses url and applies cfg over it (see Config). It is what
// Open uses; exposed so callers and tests can inspect the result.
func PoolConfig(url string, cfg Config) (*pgxpool.Config, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("milldb: config: %w", err)
	}
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("milldb: no database URL given")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("milldb: parse database URL: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		pc.MaxConns = DefaultMaxConns
	}
	if cfg.MinConns > 0 {
		pc.MinConns = cfg.MinConns
	}
	if pc.MinConns > pc.MaxConns {
		pc.MinConns = pc.MaxConns
	}
	switch {
	case cfg.ConnectTimeout > 0:
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	case pc.ConnConfig.ConnectTimeout == 0:
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	switch {
	case cfg.MaxConnLifetime > 0:
		pc.MaxConnLifetime = cfg.MaxConnLifetime
	case !strings.Contains(url, "pool_max_conn_lifetime"):
		pc.MaxConnLifetime = DefaultMaxConnLifetime
	}
	switch {
	case cfg.MaxConnIdleTime > 0:
		pc.MaxConnIdleTime = cfg.MaxConnIdleTime
	case !strings.Contains(url, "pool_max_conn_idle_time"):
		pc.MaxConnIdleTime = DefaultMaxConnIdleTime
	}
	if cfg.ApplicationName != "" {
		pc.ConnConfig.RuntimeParams["application_name"] = cfg.ApplicationName
	} else if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = DefaultApplicationName
	}
	if cfg.Tracer != nil {
		pc.ConnConfig.Tracer = cfg.Tracer
	}
	return pc, nil
}

// Open creates a pool for url (a postgres:// URL or key=value DSN) and checks
// that the server answers, so a wrong URL fails here rather than at the first
// query: a server that cannot be connected to is an *UnreachableError, which
// says what to do in one line. The caller closes the DB.
func Open(ctx context.Context, url string, cfg Config) (*DB, error) {
	pc, err := PoolConfig(url, cfg)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("milldb: open pool: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, pc.ConnConfig.ConnectTimeout+5*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		where := fmt.Sprintf("%s:%d/%s", pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database)
		if unreachable(err) && ctx.Err() == nil {
			return nil, &UnreachableError{Server: where, Err: err}
		}
		return nil, fmt.Errorf("milldb: connect to %s: %w", where, err)
	}
	return &DB{Pool: pool}, nil
}

// UnreachableError says, in one line with the likely fix, that the
// database server could not be connected to (refused, timed out, no route,
// unknown host) — as opposed to a server that answered and refused (a wrong
// password, no such database), which Open reports as it is.
type UnreachableError struct {
	Server string // host:port/database
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach PostgreSQL at %s: %s; %s", e.Server, netCause(e.Err), e.Hint())
}

// Hint is the likely fix.
func (e *UnreachableError) Hint() string {
	return "is it running? Start the local one with `make up`, or check the database URL (--database-url, MILL_DATABASE_URL)"
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable reports whether err is a failure to connect at all.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, context.DeadlineExceeded)
}

// netCause is the network error under err, without pgx's wrapping.
func netCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}
