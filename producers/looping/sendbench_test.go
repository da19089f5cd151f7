package looping_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
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
// LocalStack when it answers) with one batch in flight — the sequential
// baseline — then with DefaultSendsInFlight and with 32, and reports each
// run's tasks/s and the default's over the baseline.
func BenchmarkEnqueueInFlight(b *testing.B) {
	cfg := testenv.AWS(b)
	ep := testenv.BenchSQSEndpoint(b)
	client := cfg.SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	ctx := context.Background()
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, client, prefix)
	items := 10000
	if n, err := strconv.Atoi(os.Getenv("MILL_BENCH_ENQUEUE_TASKS")); err == nil && n >= 1000 {
		items = n
	}
	rate := func(inFlight int) float64 {
		name := fmt.Sprintf("%senq-%d", prefix, inFlight)
		if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
			b.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, client, name, sqsqueue.Config{})
		if err != nil {
			b.Fatal(err)
		}
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
		start := time.Now()
		sum, err := loop.Run(ctx)
		elapsed := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if got := sum.RunQueued.Total(); got != int64(items) {
			b.Fatalf("%d in flight: queued %d tasks, want %d", inFlight, got, items)
		}
		b.Logf("%d in flight: %d tasks in %v", inFlight, items, elapsed)
		return float64(items) / elapsed.Seconds()
	}
	for b.Loop() {
		seq := rate(1)
		def := rate(looping.DefaultSendsInFlight)
		wide := rate(32)
		b.ReportMetric(seq, "seq-tasks/s")
		b.ReportMetric(def, "tasks/s")
		b.ReportMetric(wide, "32-tasks/s")
		b.ReportMetric(def/seq, "inflight/seq")
	}
}
