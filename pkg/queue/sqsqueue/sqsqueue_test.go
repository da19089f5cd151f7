package sqsqueue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/queuetest"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// client returns an SQS client on the local emulator with a meter, and a
// prefix whose queues are deleted when the test ends.
func client(t *testing.T) (*sqs.Client, *sqsqueue.Meter, string) {
	t.Helper()
	cfg := testenv.AWS(t)
	meter := sqsqueue.NewMeter()
	c := cfg.SQS(meter.Option())
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, c, prefix)
	return c, meter, prefix
}

const visibility = 2 * time.Second

func newQueue(t *testing.T, o queuetest.Options) queuetest.Fixture {
	c, _, prefix := client(t)
	ctx := context.Background()
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = visibility
	}
	var f queuetest.Fixture
	sq := setup.Queue{Client: c, QueueName: prefix + "q", VisibilityTimeout: o.VisibilityTimeout}
	if o.MaxReceiveCount > 0 {
		if _, err := (setup.Queue{Client: c, QueueName: prefix + "dlq", VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		dlq, err := sqsqueue.Open(ctx, c, prefix+"dlq", sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		f.DeadLetter = dlq
		sq.DeadLetter, sq.MaxReceiveCount = prefix+"dlq", o.MaxReceiveCount
	}
	if _, err := sq.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := sqsqueue.Open(ctx, c, prefix+"q", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.Queue = q
	f.Advance = time.Sleep
	return f
}

func TestConformance(t *testing.T) {
	slack := 2 * time.Second
	if testenv.RealAWS() {
		// SQS's approximate counts may take up to a minute to settle.
		slack = time.Minute
	}
	queuetest.Run(t, queuetest.Harness{New: newQueue, Visibility: visibility, Slack: slack, ApproximateDepth: true})
}

func TestOpenMissing(t *testing.T) {
	c, _, prefix := client(t)
	_, err := sqsqueue.Open(context.Background(), c, prefix+"absent", sqsqueue.Config{})
	if !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("open a missing queue: %v, want queue.ErrNotFound", err)
	}
}

func TestMeterCountsBatches(t *testing.T) {
	plain, _, prefix := client(t)
	meter := sqsqueue.NewMeter()
	// No SDK retries here: the meter counts every attempt, and this test
	// counts requests of calls that succeed at once. The queue is made
	// with the ordinary client, whose retries ride out an emulator's
	// dropped connection (its GetQueueUrl answers 400 first).
	c := testenv.AWS(t).SQS(meter.Option(), func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	ctx := context.Background()
	if _, err := (setup.Queue{Client: plain, QueueName: prefix + "m", VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := sqsqueue.Open(ctx, c, prefix+"m", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	meter.Reset()
	entries := make([]queue.SendEntry, 25)
	for i := range entries {
		entries[i].Body = []byte("m")
	}
	if err := q.Send(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	// Three 100 KiB messages: two fit one 256 KiB batch, the third does not.
	big := strings.Repeat("b", 100<<10)
	if err := q.Send(ctx, queue.SendEntry{Body: []byte(big)}, queue.SendEntry{Body: []byte(big)}, queue.SendEntry{Body: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	if got := meter.Snapshot()["SendMessageBatch"]; got != 5 {
		t.Fatalf("SendMessageBatch requests %d, want 3 + 2 (%v)", got, meter.Snapshot())
	}
	if _, err := q.Depth(ctx); err != nil {
		t.Fatal(err)
	}
	if got := meter.Snapshot()["GetQueueAttributes"]; got != 1 {
		t.Fatalf("GetQueueAttributes %d", got)
	}
	if meter.Total() != 6 {
		t.Fatalf("total %d, want 6 (%v)", meter.Total(), meter.Snapshot())
	}
}
