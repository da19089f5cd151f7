package wiring

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// syncBuilder is a strings.Builder safe for concurrent writes.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAWSQueuesLogToTheProcessLogger: the queues AWS opens log to
// AWSConfig.Logger — here, the send the SDK made twice because the
// answer to its first attempt broke (after the emulator stored it).
func TestAWSQueuesLogToTheProcessLogger(t *testing.T) {
	if testenv.RealAWS() {
		t.Skip("the proxy stands in front of the emulator")
	}
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
	u, err := url.Parse(testenv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.NewHTTP(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	broke := false // read under the proxy's lock
	proxy.BreakBodies(1, func(r *http.Request) bool {
		if broke || !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".SendMessageBatch") {
			return false
		}
		broke = true
		return true
	})
	var logs syncBuilder
	d, closeDeps, err := AWS(ctx, AWSConfig{
		AWS: awsCfg, Types: []task.Type{task.TypeNoop}, QueuePrefix: prefix,
		SQSOptions: []func(*sqs.Options){func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) }},
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
