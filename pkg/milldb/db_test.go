package milldb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPoolConfig(t *testing.T) {
	pc, err := PoolConfig("postgres://u:secret@127.0.0.1:5432/db", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxConns != DefaultMaxConns || pc.ConnConfig.ConnectTimeout != DefaultConnectTimeout ||
		pc.MaxConnLifetime != DefaultMaxConnLifetime || pc.MaxConnIdleTime != DefaultMaxConnIdleTime ||
		pc.ConnConfig.RuntimeParams["application_name"] != DefaultApplicationName {
		t.Fatalf("defaults not applied: max %d timeout %v lifetime %v idle %v app %q", pc.MaxConns,
			pc.ConnConfig.ConnectTimeout, pc.MaxConnLifetime, pc.MaxConnIdleTime, pc.ConnConfig.RuntimeParams["application_name"])
	}
	// The URL wins over defaults; Config wins over the URL.
	pc, err = PoolConfig("postgres://127.0.0.1/db?pool_max_conns=3&connect_timeout=2&application_name=x", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxConns != 3 || pc.ConnConfig.ConnectTimeout != 2*time.Second || pc.ConnConfig.RuntimeParams["application_name"] != "x" {
		t.Fatalf("URL settings lost: %d %v %q", pc.MaxConns, pc.ConnConfig.ConnectTimeout, pc.ConnConfig.RuntimeParams["application_name"])
	}
	pc, err = PoolConfig("postgres://127.0.0.1/db?pool_max_conns=3", Config{MaxConns: 7, MinConns: 9, ConnectTimeout: time.Second})
	if err == nil {
		t.Fatalf("MinConns > MaxConns accepted: %+v", pc)
	}
	pc, err = PoolConfig("postgres://127.0.0.1/db?pool_max_conns=3", Config{MaxConns: 7, ConnectTimeout: time.Second})
	if err != nil || pc.MaxConns != 7 || pc.ConnConfig.ConnectTimeout != time.Second {
		t.Fatalf("Config did not win: %v", err)
	}
}

func TestPoolConfigErrors(t *testing.T) {
	if _, err := PoolConfig("", Config{}); err == nil {
		t.Fatal("empty URL accepted")
	}
	_, err := PoolConfig("postgres://u:hunter2@127.0.0.1:notaport/db", Config{})
	if err == nil {
		t.Fatal("bad URL accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
	if _, err := PoolConfig("postgres://127.0.0.1/db", Config{MaxConns: -1}); err == nil {
		t.Fatal("negative MaxConns accepted")
	}
}

func TestOpenUnreachable(t *testing.T) {
	// Port 1 on loopback: nothing listens; Open must fail fast, not at the
	// first query.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	db, err := Open(ctx, "postgres://u:p@127.0.0.1:1/db?sslmode=disable", Config{ConnectTimeout: 2 * time.Second})
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded against a closed port")
	}
	if time.Since(start) > 8*time.Second {
		t.Fatalf("Open took %v", time.Since(start))
	}
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Server != "127.0.0.1:1/db" {
		t.Fatalf("Open: %v; want an UnreachableError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "u:p") || !strings.Contains(msg, "make up") || !strings.Contains(msg, "connection refused") {
		t.Errorf("message: %q", msg)
	}
}
