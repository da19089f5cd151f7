package sqsqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// BenchmarkSendReceiveDelete moves benchMessages messages through a queue in
// batches of 10 per b.N iteration and reports SQS requests per message (0.3
// is ideal: a tenth of a request each to send, receive and delete) and
// messages per second, on MILL_BENCH_SQS_ENDPOINT when it is set.
func BenchmarkSendReceiveDelete(b *testing.B) {
	const benchMessages = 2000
	cfg := testenv.AWS(b)
	meter := sqsqueue.NewMeter()
	// MILL_BENCH_SQS_ENDPOINT (make bench: LocalStack when it answers),
	// else the emulator's: moto answers a receive in time proportional
	// to the queue's depth, which took this benchmark minutes there.
	ep := testenv.BenchSQSEndpoint(b)
	c := cfg.SQS(meter.Option(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, c, prefix)
	ctx := context.Background()
	if _, err := (setup.Queue{Client: c, QueueName: prefix + "bench", VisibilityTimeout: time.Minute}).Ensure(ctx); err != nil {
		b.Fatal(err)
	}
	q, err := sqsqueue.Open(ctx, c, prefix+"bench", sqsqueue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]queue.SendEntry, benchMessages)
	for i := range entries {
		entries[i].Body = []byte(fmt.Sprintf(`{"v":1,"type":"NOOP","props":{"n":"%d"}}`, i))
	}
	meter.Reset()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := q.Send(ctx, entries...); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < benchMessages; {
			ms, err := q.Receive(ctx, queue.MaxBatch, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if len(ms) == 0 {
				b.Fatalf("queue answered empty after %d of %d", got, benchMessages)
			}
			if err := q.Delete(ctx, ms...); err != nil {
				b.Fatal(err)
			}
			got += len(ms)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * benchMessages)
	b.ReportMetric(float64(meter.Total())/n, "req/msg")
	b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
	b.Logf("requests: %v", meter.Snapshot())
}
