package milldb_test

import (
	"context"
	"testing"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/bitlogtest"
	"github.com/millfleet/mill/pkg/milldb"
)

func TestBitLog(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// One schema for the suite; each subtest starts from empty tables.
	bitlogtest.Run(t, func(t *testing.T) bitlog.Log {
		if _, err := pool.Exec(ctx, "TRUNCATE bit_log, bit_report"); err != nil {
			t.Fatal(err)
		}
		return milldb.NewBitLog(pool)
	})
}
