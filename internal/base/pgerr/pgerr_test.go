package pgerr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/millfleet/mill/internal/base/pgerr"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

func TestFind(t *testing.T) {
	wrapped := fmt.Errorf("bit log: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection"})
	cases := []struct {
		name  string
		err   error
		codes []string
		want  bool
	}{
		{"code in the chain", wrapped, []string{pgerr.AdminShutdown}, true},
		{"one of several", wrapped, []string{pgerr.TooManyConnections, pgerr.AdminShutdown}, true},
		{"another code", wrapped, []string{pgerr.CrashShutdown, pgerr.CannotConnectNow}, false},
		{"a code of the class", &pgconn.PgError{Code: "08006"}, []string{pgerr.ClassConnectionException}, true},
		{"the class's own code", &pgconn.PgError{Code: "08000"}, []string{pgerr.ClassConnectionException}, true},
		{"a code of another class", &pgconn.PgError{Code: "57P01"}, []string{pgerr.ClassConnectionException}, false},
		{"a full code is no class", &pgconn.PgError{Code: "42P01"}, []string{"42P0"}, false},
		{"no codes", wrapped, nil, false},
		{"no server error", errors.New("57P01"), []string{pgerr.AdminShutdown}, false},
		{"nil", nil, []string{pgerr.AdminShutdown}, false},
	}
	for _, c := range cases {
		pe, ok := pgerr.Find(c.err, c.codes...)
		if ok != c.want || (pe != nil) != c.want || pgerr.Is(c.err, c.codes...) != c.want {
			t.Errorf("%s: Find = %v, %v; Is = %v; want %v", c.name, pe, ok, pgerr.Is(c.err, c.codes...), c.want)
		}
		if ok && !errors.Is(c.err, pe) {
			t.Errorf("%s: Find returned %v, not the error of the chain", c.name, pe)
		}
	}
}

// TestCodesOfTheServer: the named codes are what PostgreSQL answers.
func TestCodesOfTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		`CREATE TABLE checked (n int CHECK (n > 0))`,
		`CREATE TABLE by_month (m date) PARTITION BY RANGE (m)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, c := range []struct{ sql, code string }{
		{`SELECT n FROM missing`, pgerr.UndefinedTable},
		{`SELECT missing FROM checked`, pgerr.UndefinedColumn},
		{`INSERT INTO checked VALUES (0)`, pgerr.CheckViolation},
		{`INSERT INTO by_month VALUES ('2026-01-01')`, pgerr.CheckViolation}, // no partition of relation
		{`SELECT pg_terminate_backend(pg_backend_pid())`, pgerr.AdminShutdown},
	} {
		_, err := conn.Exec(ctx, c.sql)
		if !pgerr.Is(fmt.Errorf("wrapped: %w", err), c.code) {
			t.Errorf("%s: %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
}
