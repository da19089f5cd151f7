package pgruns_test

import (
	"context"
	"errors"
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

// TestRecordWithoutTables: on a database the runs migration has not
// reached (Workman upgraded before millctl migrate up), no producer can
// have recorded a run, so an outcome is refused as ErrNoRun — not an
// error that would keep the task's message coming back.
func TestRecordWithoutTables(t *testing.T) {
	pool := testenv.Pool(t)
	_, err := pgruns.New(pool).Record(context.Background(), runs.Outcome{Producer: runs.ProducerDup, RunID: "20260501T030000Z",
		Key: "k", State: runs.StateDone})
	if !errors.Is(err, runs.ErrNoRun) {
		t.Fatalf("record without the tables: %v, want ErrNoRun", err)
	}
}
