package mysqlduradb_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/duradbtest"
	"github.com/millfleet/mill/pkg/duradb/mysqlduradb"
	"github.com/millfleet/mill/processors"
)

func open(t *testing.T) *mysqlduradb.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := mysqlduradb.Open(ctx, testenv.MySQL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	duradbtest.Run(t, func(t *testing.T) duradb.DB { return open(t) })
}

// TestMigrationsOnce: a second Open (another process) applies nothing,
// and a deployment's existing tables and rows are kept.
func TestMigrationsOnce(t *testing.T) {
	dsn := testenv.MySQL(t)
	ctx := context.Background()
	db, err := mysqlduradb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.PutManifest(ctx, duradb.ManifestItem{Account: "a", StoreID: "1", SpaceID: "s", ContentID: "c",
		Checksum: "x", Size: "1", MimeType: "m", Modified: duradbtest.T0}); err != nil {
		t.Fatal(err)
	}
	applied, err := mysqlduradb.Up(ctx, db.SQL())
	if err != nil || len(applied) != 0 {
		t.Fatalf("second Up = %v, %v; want nothing applied", applied, err)
	}
	if _, err := db.SQL().ExecContext(ctx, "DELETE FROM mill_duradb_migrations"); err != nil {
		t.Fatal(err)
	}
	// As on a DuraCloud deployment whose tables Mill did not create.
	applied, err = mysqlduradb.Up(ctx, db.SQL())
	if err != nil || !slices.Equal(applied, []int{1}) {
		t.Fatalf("Up over existing tables = %v, %v; want [1]", applied, err)
	}
	rows, err := db.Manifest(ctx, "a", "1", "s")
	if err != nil || len(rows) != 1 {
		t.Fatalf("existing rows after Up: %v, %v", rows, err)
	}
}

// TestUnrepresentable: a content ID outside utf8mb3 (DuraCloud's
// charset) is ErrUnrepresentable, not an outage nor a silent change.
func TestUnrepresentable(t *testing.T) {
	db := open(t)
	_, err := db.PutManifest(context.Background(), duradb.ManifestItem{Account: "a", StoreID: "1", SpaceID: "s",
		ContentID: "smile-\U0001F600", Checksum: "x", Size: "1", MimeType: "m", Modified: duradbtest.T0})
	if !errors.Is(err, duradb.ErrUnrepresentable) {
		t.Fatalf("err = %v, want ErrUnrepresentable", err)
	}
	if _, ok := processors.IsUnavailable(err); ok {
		t.Fatalf("a refused row taken for an outage: %v", err)
	}
}

// TestOutage: a server that does not answer is an outage of
// duradb.DependencyMySQL (Workman's circuit), not the task's failure.
func TestOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx := context.Background()
	_, err = mysqlduradb.Open(ctx, "mill:mill@tcp("+addr+")/duracloud_mill")
	if dep, ok := processors.IsUnavailable(err); !ok || dep != duradb.DependencyMySQL {
		t.Fatalf("Open on a closed port: %v (IsUnavailable %q, %v); want an outage of %s", err, dep, ok, duradb.DependencyMySQL)
	}
}
