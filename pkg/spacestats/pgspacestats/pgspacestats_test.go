package pgspacestats_test

import (
	"context"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/spacestats/spacestatstest"
)

func TestSpaceStats(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	spacestatstest.Run(t, spacestatstest.Harness{New: func(t *testing.T) spacestats.Store {
		if _, err := pool.Exec(ctx, "TRUNCATE space_stats"); err != nil {
			t.Fatal(err)
		}
		return pgspacestats.New(pool)
	}})
}
