package looping_test

import (
	"context"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/producers/looping"
)

// BenchmarkProducerEnqueue runs one looping-producer run that queues 2,000
// tasks (two morsels, bites of 1,000) onto an SQS queue on the emulator
// (MILL_BENCH_SQS_ENDPOINT when it is set: make bench points it at
// LocalStack; moto took 50 s, 39 tasks/s, under load) and reports SQS
// requests per task as the request meter counts them: batched sends of 10
// plus the queue-depth check before each bite.
func BenchmarkProducerEnqueue(b *testing.B) {
	cfg := testenv.AWS(b)
	ctx := context.Background()
	meter := sqsqueue.NewMeter()
	ep := testenv.BenchSQSEndpoint(b)
	client := cfg.SQS(meter.Option(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, client, prefix)
	name := prefix + "dup-low"
	if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
		b.Fatal(err)
	}
	q, err := sqsqueue.Open(ctx, client, name, sqsqueue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	const items = 2000
	loop, err := looping.New(looping.Config{
		Kind:     "bench",
		Producer: counter{spaces: map[string]int{"red": items / 2, "blue": items / 2}},
		Queue:    q, State: looping.NewMemoryStore(), Lease: memlease.New(nil),
		Frequency: looping.Frequency{N: 1, Unit: looping.Days}, MaxQueueSize: 10 * items,
		Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff,
	})
	if err != nil {
		b.Fatal(err)
	}
	meter.Reset()
	b.ResetTimer()
	start := time.Now()
	sum, err := loop.Run(ctx)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if got := sum.RunQueued.Total(); got != items {
		b.Fatalf("queued %d tasks, want %d (%s)", got, items, sum)
	}
	b.ReportMetric(float64(meter.Total())/items, "req/task")
	b.ReportMetric(items/elapsed.Seconds(), "tasks/s")
	b.Logf("%s; SQS requests %v", sum, meter.Snapshot())
}
