package looping_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/producers/looping"
)

// BenchmarkEnqueueInFlight runs one looping-producer run of
// MILL_BENCH_ENQUEUE_TASKS tasks (default 10,000; two morsels, bites of
// 1,000) onto a fresh queue on MILL_BENCH_SQS_ENDPOINT (make bench:
// LocalStack when it answers; make test/aws: real SQS) with one batch in
// flight — the sequential baseline — then with each of
// MILL_BENCH_ENQUEUE_INFLIGHT (default 8, 16 and 32) and
// DefaultSendsInFlight. It reports each run's tasks/s (N-tasks/s), the
// default's as tasks/s and over the baseline, and the producer's own CPU
// time per task in the default's run (user + system of this process: the
// SDK's signing, JSON and HTTP included), so a slow run can be told apart
// from a slow queue. Each run's start and end (Unix ms) are logged, to
// match against the CPU time of the queue's server.
func BenchmarkEnqueueInFlight(b *testing.B) {
	cfg := testenv.AWS(b)
	// On real AWS (scripts/test-aws.sh real) there is no endpoint to set.
	var opts []func(*sqs.Options)
	if ep := testenv.BenchSQSEndpoint(b); ep != "" {
		opts = append(opts, func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	}
	client := cfg.SQS(opts...)
	ctx := context.Background()
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, client, prefix)
	items := 10000
	if n, err := strconv.Atoi(os.Getenv("MILL_BENCH_ENQUEUE_TASKS")); err == nil && n >= 1000 {
		items = n
	}
	widths := []int{8, 16, 32}
	if s := os.Getenv("MILL_BENCH_ENQUEUE_INFLIGHT"); s != "" {
		widths = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 64 {
				b.Fatalf("MILL_BENCH_ENQUEUE_INFLIGHT %q: want batches in flight between 1 and 64, comma-separated", s)
			}
			widths = append(widths, n)
		}
	}
	// rate returns one run's tasks/s and this process's CPU time per task.
	rate := func(inFlight int) (tasksPerSec, cpuPerTask float64) {
		name := fmt.Sprintf("%senq-%d", prefix, inFlight)
		if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
			b.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, client, name, sqsqueue.Config{})
		if err != nil {
			b.Fatal(err)
		}
		loop := benchLoop(b, q, items, inFlight)
		cpu0 := processCPU()
		start := time.Now()
		sum, err := loop.Run(ctx)
		elapsed := time.Since(start)
		cpu := processCPU() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if got := sum.RunQueued.Total(); got != int64(items) {
			b.Fatalf("%d in flight: queued %d tasks, want %d", inFlight, got, items)
		}
		b.Logf("%d in flight: %d tasks in %v (%.0f tasks/s), producer CPU %v (%.1f µs/task); unix ms %d-%d",
			inFlight, items, elapsed, float64(items)/elapsed.Seconds(), cpu, float64(cpu.Microseconds())/float64(items),
			start.UnixMilli(), start.Add(elapsed).UnixMilli())
		return float64(items) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(items)
	}
	if !slices.Contains(widths, looping.DefaultSendsInFlight) {
		widths = append(widths, looping.DefaultSendsInFlight)
	}
	for b.Loop() {
		seq, _ := rate(1)
		b.ReportMetric(seq, "seq-tasks/s")
		for _, n := range widths {
			r, cpu := rate(n)
			b.ReportMetric(r, fmt.Sprintf("%d-tasks/s", n))
			if n == looping.DefaultSendsInFlight {
				b.ReportMetric(r, "tasks/s")
				b.ReportMetric(r/seq, "inflight/seq")
				b.ReportMetric(cpu, "cpu-µs/task")
			}
		}
	}
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchLoop is an enqueue benchmark's producer: one run of items tasks in
// two spaces sent to q, inFlight batches at a time, with nothing else.
func benchLoop(b *testing.B, q *sqsqueue.Queue, items, inFlight int) *looping.Loop {
	b.Helper()
	loop, err := looping.New(looping.Config{
		Kind:     "bench",
		Producer: counter{spaces: map[string]int{"red": items / 2, "blue": items - items/2}},
		Queue:    q, State: looping.NewMemoryStore(), Lease: memlease.New(nil),
		Frequency: looping.Frequency{N: 1, Unit: looping.Days}, MaxQueueSize: 10 * int64(items),
		SendsInFlight: inFlight,
		Logger:        slog.New(slog.DiscardHandler), Progress: looping.ProgressOff,
	})
	if err != nil {
		b.Fatal(err)
	}
	return loop
}
