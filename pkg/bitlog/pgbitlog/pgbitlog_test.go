package pgbitlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/bitlogtest"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
)

func TestBitLog(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// One schema for the suite; each subtest starts from empty tables.
	bitlogtest.Run(t, bitlogtest.Harness{New: func(t *testing.T) bitlog.Log {
		if _, err := pool.Exec(ctx, "TRUNCATE bit_log, bit_report, bit_run_space, bit_verdict, bit_at_rest_job, bit_at_rest_object"); err != nil {
			t.Fatal(err)
		}
		return pgbitlog.New(pool)
	}})
}

// TestBitLogMonthDroppedElsewhere: a month one BitLog wrote to and another
// (millctl bitlog retention) dropped is made again on the next write.
func TestBitLogMonthDroppedElsewhere(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	writer, pruner := pgbitlog.New(pool), pgbitlog.New(pool)
	r := bitlog.Row{RunID: "20230105T000000Z", Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", Result: bitlog.ResultSuccess}
	if err := writer.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := pruner.DropMonths(ctx, time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r.ContentID = "b"
	if err := writer.Record(ctx, r); err != nil {
		t.Fatalf("record into a dropped month: %v", err)
	}
	if c, err := writer.Count(ctx, r.RunID, "acme", "1", "photos"); err != nil || c.Total != 1 {
		t.Fatalf("count %+v %v, want the new row only", c, err)
	}
}
