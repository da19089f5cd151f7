package looping_test

import (
	"context"
	"fmt"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"log/slog"
	"strconv"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// counter is a toy producer: each morsel is a space of numbered items, and
// each bite queues a NOOP task per item after the marker.
type counter struct{ spaces map[string]int }

func (c counter) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	return []looping.Morsel{{ID: "red"}, {ID: "blue"}}, nil
}

func (c counter) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	next := 0
	if m.Marker != "" {
		n, err := strconv.Atoi(m.Marker)
		if err != nil {
			return looping.BiteResult{}, err
		}
		next = n
	}
	end := min(next+max, c.spaces[m.ID])
	for i := next; i < end; i++ {
		t := task.New(task.TypeNoop, map[string]string{task.KeyAccount: "demo", task.KeySpaceID: m.ID, task.KeyContentID: strconv.Itoa(i)})
		if err := emit(ctx, t); err != nil {
			return looping.BiteResult{}, err
		}
	}
	return looping.BiteResult{Marker: strconv.Itoa(end), Done: end == c.spaces[m.ID]}, nil
}

func Example() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC))
	q := memqueue.New("mill-dup-low", memqueue.Config{Clock: clk})
	cfg := looping.Config{
		Kind:         "counter",
		Producer:     counter{spaces: map[string]int{"red": 25, "blue": 7}},
		Queue:        q,
		State:        looping.NewMemoryStore(), // looping.OpenStateStore("s3://bucket/key", s3Client) in production
		Lease:        memlease.New(clk),        // dynamolease.New(dynamoClient, table, nil) in production
		Frequency:    looping.Frequency{N: 1, Unit: looping.Days},
		MaxQueueSize: 15,
		BiteSize:     10,
		Clock:        clk,
		Logger:       slog.New(slog.DiscardHandler),
		Progress:     looping.ProgressOff,
	}
	loop, err := looping.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 4 {
		sum, err := loop.Run(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(sum)
		_ = q.Purge(ctx) // workers drain the queue between invocations
		clk.Advance(10 * time.Minute)
	}
	// Output:
	// counter: queue full (17 visible) after 2 bites, 17 tasks queued; 1/2 morsels done
	// counter: done after 2 bites, 15 tasks queued; 2/2 morsels done; next run due 2026-03-02T02:00:00Z
	// counter: not due until 2026-03-02T02:00:00Z
	// counter: not due until 2026-03-02T02:00:00Z
}
