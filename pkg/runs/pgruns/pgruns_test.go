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

// TestRecordWithoutRequestsColumn: on a database whose runs migration is
// applied but not the requests column's (Workman upgraded before millctl
// migrate up), an outcome carrying requests is recorded without them —
// not an error that would keep the task's message coming back.
func TestRecordWithoutRequestsColumn(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Migrate(ctx, pool, 13); err != nil {
		t.Fatalf("migrate to 13: %v", err)
	}
	s := pgruns.New(pool)
	const id = "20260501T030000Z"
	if err := s.Start(ctx, runs.Run{Producer: runs.ProducerDup, ID: id}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Record(ctx, runs.Outcome{Producer: runs.ProducerDup, RunID: id, Key: "k", State: runs.StateDone,
		Requests: map[string]int64{"s3 HeadObject": 2}})
	if err != nil || st.Done != 1 {
		t.Fatalf("record before the requests column: %+v %v, want it counted", st, err)
	}
}
