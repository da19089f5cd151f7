package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DatabaseURL returns MILL_DATABASE_URL, failing or skipping the test when
// PostgreSQL does not answer there.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	integration(t)
	u := os.Getenv("MILL_DATABASE_URL")
	if u == "" {
		Unavailable(t, "PostgreSQL", errors.New("MILL_DATABASE_URL is not set (source localstack/env.sh)"))
	}
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatalf("MILL_DATABASE_URL: %v", err)
	}
	RequireLoopback(t, "MILL_DATABASE_URL", "postgres://"+net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		Unavailable(t, "PostgreSQL at "+cfg.Host+":"+fmt.Sprint(cfg.Port), err)
	}
	conn.Close(ctx)
	return u
}

// Schema creates a fresh schema for this test and returns a database URL
// whose connections use it (search_path), dropping it when the test ends.
// Tests that commit use this; each gets an empty database to migrate.
func Schema(t testing.TB) string {
	t.Helper()
	base := DatabaseURL(t)
	name := "t_" + RunTag(t) + Unique()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create schema "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("cleanup: connect: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "drop schema "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
			t.Logf("cleanup: drop schema %s: %v", name, err)
		}
	})
	return WithSearchPath(base, name)
}

// WithSearchPath returns dbURL with its search_path set to schema.
func WithSearchPath(dbURL, schema string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Pool returns a pgx pool on a fresh schema (see Schema), closed when the
// test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
