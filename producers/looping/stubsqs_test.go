package looping_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/producers/looping"
)

// stubSQS answers the SQS JSON protocol's GetQueueUrl, GetQueueAttributes
// (an empty queue) and SendMessageBatch (every entry accepted, with the
// body's MD5 the SDK checks), a batch after latency, and counts the
// messages sent.
type stubSQS struct {
	latency time.Duration
	sent    atomic.Int64
}

func (s *stubSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var out any
	switch op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."); op {
	case "GetQueueUrl":
		out = map[string]string{"QueueUrl": "http://" + r.Host + "/000000000000/stub"}
	case "GetQueueAttributes":
		out = map[string]map[string]string{"Attributes": {"ApproximateNumberOfMessages": "0",
			"ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0"}}
	case "SendMessageBatch":
		var in struct {
			Entries []struct{ Id, MessageBody string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type ok struct{ Id, MessageId, MD5OfMessageBody string }
		res := struct{ Successful []ok }{}
		for i, e := range in.Entries {
			sum := md5.Sum([]byte(e.MessageBody))
			res.Successful = append(res.Successful, ok{e.Id, fmt.Sprintf("m-%d", i), hex.EncodeToString(sum[:])})
		}
		time.Sleep(s.latency) // the round trip of a batch to SQS
		s.sent.Add(int64(len(in.Entries)))
		out = res
	default:
		http.Error(w, "stub: no "+op, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

// BenchmarkEnqueueStubSQS is BenchmarkEnqueueInFlight against a stub SQS
// in this process, with no emulator behind it. Answering every batch at
// once (latency=0ms) it measures the producer's own ceiling on this
// machine: task encoding, SDK signing, JSON and HTTP over loopback, the
// stub's share of the CPU included. Answering each batch after 10 ms
// (latency=10ms, a round trip to SQS in its region) it shows what the
// batches in flight buy against a remote queue: at most inFlight × 10
// tasks per round trip. Each reports tasks/s one batch at a time, with 8
// and with DefaultSendsInFlight, and the process's CPU time per task
// (producer and stub) in the default's run.
func BenchmarkEnqueueStubSQS(b *testing.B) {
	for _, latency := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency.Milliseconds())+"ms", func(b *testing.B) { benchStub(b, latency) })
	}
}

func benchStub(b *testing.B, latency time.Duration) {
	stub := &stubSQS{latency: latency}
	srv := httptest.NewServer(stub)
	b.Cleanup(srv.Close)
	ctx := context.Background()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	client := cfg.SQS(func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.Credentials = credentials.NewStaticCredentialsProvider("stub", "stub", "")
	})
	q, err := sqsqueue.Open(ctx, client, "stub", sqsqueue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	items := 20000
	if latency > 0 {
		items = 4000 // 400 round trips: 4 s one at a time
	}
	rate := func(inFlight int) (tasksPerSec, cpuPerTask float64) {
		loop := benchLoop(b, q, items, inFlight)
		before := stub.sent.Load()
		cpu0 := processCPU()
		start := time.Now()
		sum, err := loop.Run(ctx)
		elapsed := time.Since(start)
		cpu := processCPU() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if got, sent := sum.RunQueued.Total(), stub.sent.Load()-before; got != int64(items) || sent != int64(items) {
			b.Fatalf("%d in flight: queued %d tasks, the stub got %d, want %d", inFlight, got, sent, items)
		}
		perTask := float64(cpu.Microseconds()) / float64(items)
		b.Logf("%d in flight: %d tasks in %v (%.0f tasks/s), CPU %v (%.1f µs/task)",
			inFlight, items, elapsed, float64(items)/elapsed.Seconds(), cpu, perTask)
		return float64(items) / elapsed.Seconds(), perTask
	}
	for b.Loop() {
		seq, _ := rate(1)
		eight, _ := rate(8)
		def, cpu := rate(looping.DefaultSendsInFlight)
		b.ReportMetric(seq, "seq-tasks/s")
		b.ReportMetric(eight, "8-tasks/s")
		b.ReportMetric(def, "tasks/s")
		b.ReportMetric(def/seq, "inflight/seq")
		b.ReportMetric(cpu, "cpu-µs/task")
	}
}
