package memqueue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

// A message that is not deleted within the visibility timeout is delivered
// again; a fake clock makes that instant.
func Example() {
	ctx := context.Background()
	fc := clock.NewFake(time.Time{})
	dead := memqueue.New("dead-letter", memqueue.Config{Clock: fc})
	q := memqueue.New("work", memqueue.Config{
		VisibilityTimeout: 30 * time.Second,
		MaxReceiveCount:   2,
		DeadLetter:        dead,
		Clock:             fc,
	})

	_ = q.Send(ctx, queue.SendEntry{Body: []byte("hello")})
	ms, _ := q.Receive(ctx, 10, 0)
	fmt.Println(string(ms[0].Body), ms[0].ReceiveCount)

	fc.Advance(30 * time.Second) // not deleted: visible again
	ms, _ = q.Receive(ctx, 10, 0)
	fmt.Println(string(ms[0].Body), ms[0].ReceiveCount)

	fc.Advance(30 * time.Second) // a third receive would exceed 2: dead-lettered
	ms, _ = q.Receive(ctx, 10, 0)
	fmt.Println(len(ms), q.Len(), dead.Len())

	ms, _ = dead.Receive(ctx, 10, 0)
	_ = dead.Delete(ctx, ms...)
	d, _ := dead.Depth(ctx)
	fmt.Println(d.Total(), dead.Requests()[memqueue.OpDelete])
	// Output:
	// hello 1
	// hello 2
	// 0 0 1
	// 0 1
}
