package pgcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/internal/testkit/pgcluster"
)

// TestLifecycle starts a cluster, keeps a row across a fast restart and a
// crash (immediate stop), and sees an open connection break at the
// restart.
func TestLifecycle(t *testing.T) {
	c := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.URL(pgcluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create table kept (v int); insert into kept values (42)"); err != nil {
		t.Fatal(err)
	}
	d, err := c.Restart(ctx, "fast")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart -m fast took %v", d)
	if _, err := conn.Exec(ctx, "select 1"); err == nil {
		t.Error("a connection opened before the restart still works")
	}
	if err := c.Stop(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err == nil {
		t.Fatal("the server answers after Stop")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c2, err := pgx.Connect(ctx, c.URL(pgcluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	var v int
	if err := c2.QueryRow(ctx, "select v from kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart and crash: %d, %v", v, err)
	}
}
