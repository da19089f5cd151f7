package testenv

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLVar names the DSN of the MySQL (MariaDB) server of DuraCloud's mill
// database (localstack/mariadb.sh).
const MySQLVar = "MILL_MYSQL_URL"

// MySQL creates a fresh database for this test on the server MySQLVar
// names and returns a DSN naming it, dropping it when the test ends. It
// fails (CI) or skips the test when the server does not answer.
func MySQL(t testing.TB) string {
	t.Helper()
	integration(t)
	raw := os.Getenv(MySQLVar)
	if raw == "" {
		Unavailable(t, "MariaDB", errors.New(MySQLVar+" is not set (source localstack/env.sh)"))
	}
	cfg, err := mysql.ParseDSN(raw)
	if err != nil {
		t.Fatalf("%s: %v", MySQLVar, err)
	}
	RequireLoopback(t, MySQLVar, "mysql://"+cfg.Addr)
	cfg.DBName = ""
	cfg.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("%s: %v", MySQLVar, err)
	}
	db := sql.OpenDB(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		Unavailable(t, "MariaDB at "+cfg.Addr, err)
	}
	name := "t_" + RunTag(t) + Unique()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb3"); err != nil {
		db.Close()
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE `"+name+"`"); err != nil {
			t.Logf("cleanup: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	cfg.Timeout = 0
	return cfg.FormatDSN()
}
