package lease_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/memlease"
)

func Example() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := memlease.New(clk) // dynamolease.New(dynamoClient, lease.DefaultTable, nil) in production

	me := lease.Holder{ID: "worker-1", Identity: process.Identity{Hostname: "host-a", PID: 4242, Started: clk.Now()}}
	ok, cur, err := l.Acquire(ctx, "bitproducer", me, time.Minute)
	fmt.Println("first:", ok, err)

	// A second invocation is told who holds the lease.
	other := lease.Holder{ID: "worker-2", Identity: process.Identity{Hostname: "host-b", PID: 7}}
	ok2, holder, _ := l.Acquire(ctx, "bitproducer", other, time.Minute)
	fmt.Println("second:", ok2, "held by", holder)

	// Keep renews in the background; work under kctx stops if the lease
	// is lost.
	kctx, stop := lease.Keep(ctx, l, "bitproducer", me.ID, time.Minute, cur.Expires,
		lease.KeepOptions{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	_ = kctx // do the work with kctx
	fmt.Println("stop:", stop())
	fmt.Println("release:", l.Release(ctx, "bitproducer", me.ID))
	// Output:
	// first: true <nil>
	// second: false held by host-a pid 4242 (started 2026-01-01T00:00:00Z, lease expires 2026-01-01T00:01:00Z, id worker-1)
	// stop: <nil>
	// release: <nil>
}
