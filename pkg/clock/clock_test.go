package clock

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

func TestFakeFiresInOrder(t *testing.T) {
	f := NewFake(time.Time{})
	start := f.Now()
	a := f.NewTimer(2 * time.Minute)
	b := f.NewTimer(time.Minute)
	c := f.NewTimer(10 * time.Minute)
	f.Advance(3 * time.Minute)
	if got := <-b.C(); !got.Equal(start.Add(time.Minute)) {
		t.Fatalf("b fired at %v, want +1m", got.Sub(start))
	}
	if got := <-a.C(); !got.Equal(start.Add(2 * time.Minute)) {
		t.Fatalf("a fired at %v, want +2m", got.Sub(start))
	}
	select {
	case <-c.C():
		t.Fatal("c fired early")
	default:
	}
	if !c.Stop() {
		t.Fatal("Stop of a pending timer should report true")
	}
	if f.Waiters() != 0 {
		t.Fatalf("waiters = %d, want 0", f.Waiters())
	}
	if got := f.Now().Sub(start); got != 3*time.Minute {
		t.Fatalf("now = +%v, want +3m", got)
	}
}

func TestSleepAndBlockUntil(t *testing.T) {
	f := NewFake(time.Time{})
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), f, time.Hour) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Hour)
	if err := <-done; err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := Sleep(cctx, f, time.Hour); err == nil {
		t.Fatal("Sleep on a cancelled context should fail")
	}
}

func TestAmbient(t *testing.T) {
	c, l := Ambient(nil, nil)
	if _, ok := c.(Real); !ok || l != slog.Default() {
		t.Errorf("Ambient(nil, nil) = %T, %p; want Real, slog.Default()", c, l)
	}
	fake, own := NewFake(time.Unix(0, 0)), slog.New(slog.DiscardHandler)
	if c, l := Ambient(fake, own); c != fake || l != own {
		t.Errorf("Ambient(fake, own) = %v, %p; want them unchanged", c, l)
	}
}
