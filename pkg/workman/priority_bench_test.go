package workman

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// emuRun runs a Manager over qs (the last one is the dead-letter queue)
// with handler until done is closed, then shuts it down.
func emuRun(b *testing.B, qs []*sqsqueue.Queue, workers int, share map[string]float64, handler processors.Handler, done <-chan struct{}) {
	b.Helper()
	var work []queue.Queue
	for _, q := range qs[:len(qs)-1] {
		work = append(work, q)
	}
	m, err := New(Config{
		Queues: work, DeadLetter: qs[len(qs)-1], Workers: workers, MinShare: share, Handler: handler,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	select {
	case <-done:
	case err := <-stopped:
		cancel()
		b.Fatalf("Run returned early: %v", err)
	}
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}

// feedNoops sends n NOOP tasks to q in batches of 10, keeping at most
// window more sent than done reports: moto's SQS costs O(depth) per
// request, so a deep queue would measure the emulator, not Workman. It
// stops early when stop is closed.
func feedNoops(b *testing.B, q queue.Queue, n, window int, done *atomic.Int64, stop <-chan struct{}) {
	b.Helper()
	for sent := 0; sent < n; {
		if sent-int(done.Load()) >= window {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		k := min(queue.MaxBatch, n-sent)
		sendNoops(b, q, k, nil)
		sent += k
	}
}

// BenchmarkEmulatorSixQueues compares draining NOOP tasks from one queue
// configured alone with draining them from the fifth of the six default
// queues (the other five empty). The throughput ratio comes from the two
// drains run side by side, each Workman with its own client, so both see
// the same machine and emulator load (on a shared machine it drifts several
// times over within minutes): the rates are the tasks each completed until
// the first finished, summed over races run in pairs (each Workman starts
// first in one of a pair) until at least minRaces races and minRacing of
// racing. The requests per task (receives, deletes and visibility changes)
// come from a six-queue drain of its own afterwards, as one Workman would
// run: a quiet queue's long poll costs by the minute, so a drain slowed by a
// neighbour would pay twice for it. Tasks are fed as the drains go (at most
// 300 waiting). The queues are on MILL_BENCH_SQS_ENDPOINT when it is set
// (scripts/bench.sh: LocalStack when it answers): moto's receive costs grow
// with the queue's depth, and its 2,000-task drains take minutes, so two
// races are all a run affords there; on LocalStack, which answers in
// milliseconds like SQS, a drain takes seconds and the start is a visible
// part of it. minRacing is MILL_BENCH_RACE_SECONDS (default 30; make
// bench runs 10: two races, each drain about 5 s on LocalStack here, and
// the same ratios within the noise). Run with:
//
//	go test -run '^$' -bench EmulatorSixQueues -benchtime 1x ./pkg/workman/
func BenchmarkEmulatorSixQueues(b *testing.B) {
	const (
		window   = 300
		minRaces = 2
	)
	minRacing := 30 * time.Second
	if v := os.Getenv("MILL_BENCH_RACE_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("MILL_BENCH_RACE_SECONDS=%q: want a positive number of seconds", v)
		}
		minRacing = time.Duration(n) * time.Second
	}
	cfg := testenv.AWS(b)
	ep := testenv.BenchSQSEndpoint(b)
	at := func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) }
	type drain struct {
		n       int64
		first   atomic.Int64 // UnixNano of the first completion
		meter   *sqsqueue.Meter
		qs      []*sqsqueue.Queue
		busy    int
		count   atomic.Int64
		allDone chan struct{}
	}
	prepare := func(names []string, busy int, n int64) *drain {
		d := &drain{n: n, meter: sqsqueue.NewMeter(), busy: busy, allDone: make(chan struct{})}
		d.qs = emuQueueSet(b, cfg.SQS(d.meter.Option(), at), 30*time.Second, names...)
		sendNoops(b, d.qs[busy], window, nil)
		d.meter.Reset()
		return d
	}
	run := func(d *drain, wg *sync.WaitGroup) {
		defer wg.Done()
		h := processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			d.first.CompareAndSwap(0, time.Now().UnixNano())
			if d.count.Add(1) == d.n {
				close(d.allDone)
			}
			return nil
		})
		fed := make(chan struct{})
		go func() { defer close(fed); feedNoops(b, d.qs[d.busy], int(d.n)-window, window, &d.count, d.allDone) }()
		emuRun(b, d.qs, 16, nil, h, d.allDone)
		<-fed
		if dep, _ := d.qs[d.busy].Depth(context.Background()); dep.Total() != 0 {
			b.Errorf("queue not empty after the drain: %+v", dep)
		}
	}
	reqPerTask := func(d *drain) (float64, map[string]int64) {
		snap := d.meter.Snapshot()
		reqs := snap["ReceiveMessage"] + snap["DeleteMessageBatch"] + snap["ChangeMessageVisibilityBatch"]
		return float64(reqs) / float64(d.n), snap
	}
	for range b.N {
		// Races in pairs, the other one started first in the second of
		// each: the emulator's and the machine's noise falls on both sides
		// alike.
		var oneN, sixN, secs float64
		var oneReq float64
		var oneSnap map[string]int64
		var oneFirst, sixFirst time.Duration
		races := 0
		var perRace []string
		for races < minRaces || secs < minRacing.Seconds() || races%2 == 1 {
			one := prepare([]string{queue.KeyDupLow}, 0, 2000)
			six := prepare(queue.DefaultPriority, 4, 2000)
			var wg sync.WaitGroup
			wg.Add(2)
			start := time.Now()
			first, second := one, six
			if races%2 == 1 {
				first, second = six, one
			}
			go run(first, &wg)
			go run(second, &wg)
			select {
			case <-one.allDone:
			case <-six.allDone:
			}
			elapsed := time.Since(start).Seconds()
			o, x := float64(one.count.Load()), float64(six.count.Load())
			wg.Wait()
			of, xf := time.Unix(0, one.first.Load()).Sub(start), time.Unix(0, six.first.Load()).Sub(start)
			races++
			perRace = append(perRace, fmt.Sprintf("%.3f (%.1f s, first %d/%d ms)", x/o, elapsed, of.Milliseconds(), xf.Milliseconds()))
			oneN, sixN, secs = oneN+o, sixN+x, secs+elapsed
			oneFirst, sixFirst = max(oneFirst, of), max(sixFirst, xf)
			oneReq, oneSnap = reqPerTask(one)
		}
		// One line each: go test keeps only a benchmark's first 10 lines.
		b.Logf("%d races on %s, %.1f s: six/one %.3f; the first task at most %v after the start with one queue, %v with six",
			races, ep, secs, sixN/oneN, oneFirst.Round(time.Millisecond), sixFirst.Round(time.Millisecond))
		b.Logf("six/one by race (race time, first task one/six): %s", strings.Join(perRace, ", "))

		solo := prepare(queue.DefaultPriority, 4, 2000)
		var wg sync.WaitGroup
		wg.Add(1)
		start := time.Now()
		run(solo, &wg)
		sixReq, sixSnap := reqPerTask(solo)
		b.Logf("six queues alone: 2000 tasks in %v, requests %v = %.4f req/task (one queue, last race: %v = %.4f)",
			time.Since(start).Round(time.Millisecond), sixSnap, sixReq, oneSnap, oneReq)
		b.ReportMetric(sixN/secs, "six-tasks/s")
		b.ReportMetric(oneN/secs, "one-tasks/s")
		b.ReportMetric(sixN/oneN, "six/one")
		b.ReportMetric(sixReq, "six-req/task")
		b.ReportMetric(oneReq, "one-req/task")
		b.ReportMetric(float64(sixFirst.Milliseconds()), "six-first-ms")
		b.ReportMetric(float64(oneFirst.Milliseconds()), "one-first-ms")
	}
}

// BenchmarkEmulatorHighPickup keeps every worker busy with 2 s tasks from
// dup-low and sends one task to dup-high, three times; it reports the
// longest time from that send to the task's start (pickup-s) and the bar it
// must stay within, one low task's duration + 1 s (bound-s). Run with:
//
//	go test -run '^$' -bench EmulatorHighPickup -benchtime 1x ./pkg/workman/
func BenchmarkEmulatorHighPickup(b *testing.B) {
	const (
		workers = 4
		lowTask = 2 * time.Second
		samples = 3
	)
	client := testenv.AWS(b).SQS()
	for range b.N {
		qs := emuQueueSet(b, client, 30*time.Second, queue.DefaultPriority...)
		// Enough low work to keep every worker busy throughout.
		sendNoops(b, qs[4], workers*(samples*5+10)*int(time.Second/lowTask+1), map[string]string{"kind": "low"})
		var mu sync.Mutex
		started := map[string]time.Time{}
		h := processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			if tk.Get("kind") == "urgent" {
				mu.Lock()
				started[tk.Get("id")] = time.Now()
				mu.Unlock()
				return nil
			}
			select {
			case <-time.After(lowTask):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		done := make(chan struct{})
		var worst time.Duration
		go func() {
			defer close(done)
			for i := range samples {
				time.Sleep(4*time.Second + time.Duration(i)*700*time.Millisecond) // a different phase each time
				id := string(rune('a' + i))
				tk := task.New(task.TypeNoop, map[string]string{"kind": "urgent", "id": id})
				body, err := task.Encode(tk, task.FormatJSON)
				if err != nil {
					b.Error(err)
					return
				}
				sent := time.Now()
				if err := qs[1].Send(context.Background(), queue.SendEntry{Body: body}); err != nil {
					b.Error(err)
					return
				}
				deadline := time.Now().Add(time.Minute)
				for time.Now().Before(deadline) {
					mu.Lock()
					at, ok := started[id]
					mu.Unlock()
					if ok {
						worst = max(worst, at.Sub(sent))
						b.Logf("urgent task %s started %v after it was sent", id, at.Sub(sent).Round(time.Millisecond))
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
		emuRun(b, qs, workers, nil, h, done)
		if len(started) != samples {
			b.Fatalf("%d of %d urgent tasks started", len(started), samples)
		}
		b.ReportMetric(worst.Seconds(), "pickup-s")
		b.ReportMetric((lowTask + time.Second).Seconds(), "bound-s")
	}
}

// BenchmarkEmulatorMinShare floods dup-high and bit and counts what bit
// completes until dup-high has drained, with --min-share bit=0.2 and
// without. It reports bit's share of the completed tasks in percent for
// each (the bars: 20 ± 5 and 0). The queues are on MILL_BENCH_SQS_ENDPOINT
// when it is set (make bench: LocalStack; on moto under load this took 160
// s instead of the 45 s its tasks take). Run with:
//
//	go test -run '^$' -bench EmulatorMinShare -benchtime 1x ./pkg/workman/
func BenchmarkEmulatorMinShare(b *testing.B) {
	// Eight workers × 0.5 s tasks need 16 tasks/s: less than the emulator
	// delivers, so dup-high keeps every worker busy, as a backlog would.
	const (
		n        = 150
		taskTime = 500 * time.Millisecond
	)
	ep := testenv.BenchSQSEndpoint(b)
	client := testenv.AWS(b).SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	share := func(c *sqs.Client, floor float64) float64 {
		qs := emuQueueSet(b, c, 30*time.Second, queue.DefaultPriority...)
		sendNoops(b, qs[1], n, map[string]string{"kind": "high"})
		sendNoops(b, qs[5], n, map[string]string{"kind": "bit"})
		var high, bit atomic.Int64
		done := make(chan struct{})
		h := processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			time.Sleep(taskTime)
			if tk.Get("kind") == "bit" {
				if high.Load() < n {
					bit.Add(1)
				}
				return nil
			}
			if high.Add(1) == n {
				close(done)
			}
			return nil
		})
		var shares map[string]float64
		if floor > 0 {
			shares = map[string]float64{qs[5].Name(): floor}
		}
		emuRun(b, qs, 8, shares, h, done)
		pct := 100 * float64(bit.Load()) / float64(bit.Load()+n)
		b.Logf("min share %v: bit completed %d while dup-high completed %d: %.1f %%", floor, bit.Load(), n, pct)
		return pct
	}
	for range b.N {
		b.ReportMetric(share(client, 0.2), "bit-%-share")
		b.ReportMetric(share(client, 0), "bit-%-strict")
	}
}
