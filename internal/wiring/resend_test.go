package wiring

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TestAWSQueuesLogToTheProcessLogger: the queues AWS opens log to
// AWSConfig.Logger — here, the send the SDK made twice because the
// answer to its first attempt broke (after the emulator stored it).
func TestAWSQueuesLogToTheProcessLogger(t *testing.T) {
	awsCfg := testenv.AWS(t)
	c := awsCfg.SQS()
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, c, prefix)
	ctx := context.Background()
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: c, QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	proxy, viaProxy := testenv.BreakSends(t, 1)
	var logs testbin.Buffer
	d, closeDeps, err := AWS(ctx, AWSConfig{
		AWS: awsCfg, Types: []task.Type{task.TypeNoop}, QueuePrefix: prefix,
		SQSOptions: []func(*sqs.Options){viaProxy},
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDeps()
	q, err := d.Queues.Get(queue.KeyAudit)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if proxy.Breaks() != 1 {
		t.Fatalf("%d answers broken, want 1", proxy.Breaks())
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", "queue=" + queue.Name(prefix, queue.KeyAudit), "action=SendMessageBatch", "attempts=2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("process log %q lacks %q", out, want)
		}
	}
}
