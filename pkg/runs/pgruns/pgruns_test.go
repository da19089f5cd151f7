package pgruns_test

import (
	"context"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/runs/runstest"
)

func TestStore(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	runstest.Run(t, runstest.Harness{New: func(t *testing.T) runs.Store {
		if _, err := pool.Exec(ctx, "TRUNCATE run_record, run_outcome"); err != nil {
			t.Fatal(err)
		}
		return pgruns.New(pool)
	}})
}
