package mysqlduradb

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/millfleet/mill/pkg/milldb"
)

//go:embed migrations
var migrationFS embed.FS

// Migrations returns the migrations compiled into this binary (named and
// checked as milldb's are).
func Migrations() ([]milldb.Migration, error) {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	return milldb.ParseMigrations(sub)
}

// lockName serialises migrations across Mill's processes (GET_LOCK).
const lockName = "mill_duradb_migrate"

// Up creates the tables Mill writes where they are missing, records each
// migration applied in mill_duradb_migrations, and returns the versions it
// applied. Concurrent callers wait for each other (GET_LOCK). Tables that
// exist (a DuraCloud deployment's) are left as they are.
func Up(ctx context.Context, db *sql.DB) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, classify(err)
	}
	defer c.Close()
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", lockName).Scan(&got); err != nil {
		return nil, classify(err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("mysqlduradb: migrations: lock %s not granted in 60 s", lockName)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", lockName) //nolint:errcheck // released with the connection anyway
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS mill_duradb_migrations (
		version int NOT NULL PRIMARY KEY, name varchar(255) NOT NULL,
		applied datetime(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) ENGINE=InnoDB`); err != nil {
		return nil, classify(err)
	}
	applied := map[int]bool{}
	rows, err := c.QueryContext(ctx, "SELECT version FROM mill_duradb_migrations")
	if err != nil {
		return nil, classify(err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		applied[v] = true
	}
	if err := rows.Close(); err != nil {
		return nil, classify(err)
	}
	var done []int
	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		// MySQL commits DDL implicitly: each statement on its own, each
		// idempotent (IF NOT EXISTS), then the record.
		for _, stmt := range statements(m.Up) {
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return done, fmt.Errorf("mysqlduradb: migration %s: %w", m.ID(), classify(err))
			}
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO mill_duradb_migrations (version, name) VALUES (?, ?)", m.Version, m.Name); err != nil {
			return done, fmt.Errorf("mysqlduradb: migration %s: %w", m.ID(), classify(err))
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// statements splits a migration file at semicolons ending a line, dropping
// comment lines (the files hold no semicolon inside a statement).
func statements(sqlText string) []string {
	var out []string
	var b strings.Builder
	for _, line := range strings.Split(sqlText, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(b.String()), ";"))
			b.Reset()
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}
