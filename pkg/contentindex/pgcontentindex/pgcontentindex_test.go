package pgcontentindex_test

import (
	"context"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/contentindextest"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
)

func TestContentIndex(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// One schema for the suite; each subtest starts from an empty table.
	contentindextest.Run(t, contentindextest.Harness{New: func(t *testing.T) contentindex.Index {
		if _, err := pool.Exec(ctx, "TRUNCATE content_index"); err != nil {
			t.Fatal(err)
		}
		return pgcontentindex.New(pool)
	}})
}
