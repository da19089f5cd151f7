package memqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

func groups(ms []*queue.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Group)
	}
	return b.String()
}

// TestFairDelivery: 20 messages of tenant A sent before 2 of B and 1
// without a group. Once A holds the in-flight messages, a fair queue hands
// out B's and the ungrouped one before A's remaining ones; a plain queue
// keeps send order.
func TestFairDelivery(t *testing.T) {
	for _, fair := range []bool{false, true} {
		q := memqueue.New("q", memqueue.Config{Fair: fair, Clock: clock.NewFake(time.Unix(0, 0))})
		var es []queue.SendEntry
		for range 20 {
			es = append(es, queue.SendEntry{Body: []byte("a"), Group: "A"})
		}
		es = append(es, queue.SendEntry{Body: []byte("b"), Group: "B"}, queue.SendEntry{Body: []byte("b"), Group: "B"}, queue.SendEntry{Body: []byte("-")})
		ctx := context.Background()
		if err := q.Send(ctx, es...); err != nil {
			t.Fatal(err)
		}
		first, err := q.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		second, err := q.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := "AAAAAAAAAA"
		if fair {
			want = "BBAAAAAAA" // B, B, the ungrouped one (no group to show), 7 A
		}
		if groups(first) != "AAAAAAAAAA" || groups(second) != want || (fair && string(second[2].Body) != "-") {
			t.Errorf("fair=%v: receives %q then %q, want AAAAAAAAAA then %s", fair, groups(first), groups(second), want)
		}
	}
}
