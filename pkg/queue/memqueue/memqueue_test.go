package memqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

func newQueue(t *testing.T, cfg memqueue.Config) (*memqueue.Queue, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(time.Time{})
	cfg.Clock = fc
	return memqueue.New("test", cfg), fc
}

func receiveOne(t *testing.T, q queue.Queue) *queue.Message {
	t.Helper()
	ms, err := q.Receive(context.Background(), 1, 0)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(ms) != 1 {
		t.Fatalf("receive: got %d messages, want 1", len(ms))
	}
	return ms[0]
}

func TestLongPollWakesOnSend(t *testing.T) {
	q, fc := newQueue(t, memqueue.Config{})
	got := make(chan []*queue.Message, 1)
	go func() {
		ms, err := q.Receive(context.Background(), 10, queue.MaxWait)
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fc.BlockUntil(ctx, 1); err != nil {
		t.Fatal("receiver never waited")
	}
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if ms := <-got; len(ms) != 1 || string(ms[0].Body) != "x" {
		t.Fatalf("got %v", ms)
	}
}

func TestLongPollWakesWhenDelayPasses(t *testing.T) {
	q, fc := newQueue(t, memqueue.Config{})
	ctx := context.Background()
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("d"), Delay: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []*queue.Message, 1)
	go func() {
		ms, _ := q.Receive(ctx, 10, queue.MaxWait)
		got <- ms
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := fc.BlockUntil(wctx, 1); err != nil {
		t.Fatal("receiver never waited")
	}
	if d, ok := fc.NextDeadline(); !ok || d.Sub(fc.Now()) != 5*time.Second {
		t.Fatalf("receiver should wake when the delay passes, next deadline %v", d.Sub(fc.Now()))
	}
	fc.Advance(5 * time.Second)
	if ms := <-got; len(ms) != 1 {
		t.Fatalf("got %d messages, want 1", len(ms))
	}
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	q, fc := newQueue(t, memqueue.Config{})
	got := make(chan error, 1)
	go func() {
		ms, err := q.Receive(context.Background(), 10, 3*time.Second)
		if len(ms) != 0 {
			err = errors.New("unexpected message")
		}
		got <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fc.BlockUntil(ctx, 1); err != nil {
		t.Fatal("receiver never waited")
	}
	fc.Advance(3 * time.Second)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestReceiveCancelled(t *testing.T) {
	q, fc := newQueue(t, memqueue.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := q.Receive(ctx, 10, queue.MaxWait)
		got <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := fc.BlockUntil(wctx, 1); err != nil {
		t.Fatal("receiver never waited")
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRedriveOnTheReceiveThatWouldExceed(t *testing.T) {
	dlq, _ := newQueue(t, memqueue.Config{})
	fc := clock.NewFake(time.Time{})
	q := memqueue.New("work", memqueue.Config{VisibilityTimeout: time.Minute, MaxReceiveCount: 2, DeadLetter: dlq, Clock: fc})
	ctx := context.Background()
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("poison"), Attributes: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	first := receiveOne(t, q)
	fc.Advance(time.Minute)
	if m := receiveOne(t, q); m.ReceiveCount != 2 || m.ID != first.ID {
		t.Fatalf("second receive: %+v", m)
	}
	fc.Advance(time.Minute)
	if ms, _ := q.Receive(ctx, 10, 0); len(ms) != 0 {
		t.Fatalf("third receive delivered %d messages; want the message moved", len(ms))
	}
	if q.Len() != 0 || dlq.Len() != 1 {
		t.Fatalf("len: queue %d, dead letter %d", q.Len(), dlq.Len())
	}
	m := dlq.Messages()[0]
	if m.ID != first.ID || string(m.Body) != "poison" || m.Attributes["k"] != "v" || m.ReceiveCount != 0 || m.State != memqueue.Visible {
		t.Fatalf("dead-lettered: %+v", m)
	}
}

func TestStaleReceiptDeletesNothing(t *testing.T) {
	q, fc := newQueue(t, memqueue.Config{VisibilityTimeout: time.Minute})
	ctx := context.Background()
	_ = q.Send(ctx, queue.SendEntry{Body: []byte("a")})
	old := receiveOne(t, q)
	fc.Advance(time.Minute)
	cur := receiveOne(t, q)
	if err := q.Delete(ctx, old); err != nil {
		t.Fatalf("delete with a stale receipt: %v", err)
	}
	if q.Len() != 1 {
		t.Fatal("a stale receipt must not delete the redelivered message")
	}
	err := q.ChangeVisibility(ctx, queue.VisibilityChange{Message: old, Timeout: time.Minute})
	if !errors.Is(err, queue.ErrReceiptInvalid) {
		t.Fatalf("change visibility with a stale receipt: %v", err)
	}
	if err := q.Delete(ctx, cur); err != nil || q.Len() != 0 {
		t.Fatalf("delete: %v, len %d", err, q.Len())
	}
}

func TestRequestsAndFaults(t *testing.T) {
	boom := errors.New("boom")
	q, _ := newQueue(t, memqueue.Config{Fault: func(op string, i int) error {
		if op == memqueue.OpDelete && i == 3 {
			return boom
		}
		return nil
	}})
	ctx := context.Background()
	entries := make([]queue.SendEntry, 25)
	for i := range entries {
		entries[i].Body = []byte{byte('a' + i)}
	}
	if err := q.Send(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	var got []*queue.Message
	for len(got) < 25 {
		ms, err := q.Receive(ctx, 10, 0)
		if err != nil || len(ms) == 0 {
			t.Fatalf("receive: %v, %d", err, len(ms))
		}
		got = append(got, ms...)
	}
	err := q.Delete(ctx, got...)
	if idx := queue.FailedIndexes(err, len(got)); len(idx) != 1 || idx[0] != 3 || !errors.Is(err, boom) {
		t.Fatalf("delete error %v", err)
	}
	if q.Len() != 1 {
		t.Fatalf("len %d, want the failed entry kept", q.Len())
	}
	want := map[string]int64{memqueue.OpSend: 3, memqueue.OpReceive: 3, memqueue.OpDelete: 3}
	req := q.Requests()
	for op, n := range want {
		if req[op] != n {
			t.Errorf("%s: %d requests, want %d (all %v)", op, req[op], n, req)
		}
	}
	if q.RequestTotal() != 9 {
		t.Errorf("total %d, want 9", q.RequestTotal())
	}
}

func TestLimits(t *testing.T) {
	q, _ := newQueue(t, memqueue.Config{MaxBodyBytes: 10})
	ctx := context.Background()
	err := q.Send(ctx,
		queue.SendEntry{Body: []byte("ok")},
		queue.SendEntry{Body: []byte("far too long a body")},
		queue.SendEntry{Body: []byte("late"), Delay: queue.MaxDelay + time.Second},
	)
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 2 || !errors.Is(be.Failed[1], queue.ErrTooLarge) || !errors.Is(be.Failed[2], queue.ErrInvalid) {
		t.Fatalf("send: %v", err)
	}
	if q.Len() != 1 {
		t.Fatalf("len %d", q.Len())
	}
}
