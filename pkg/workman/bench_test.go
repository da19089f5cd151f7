package workman

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"runtime"
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

// BenchmarkEmulatorNoop processes benchTasks NOOP tasks through a Manager on
// the emulator and, in the same run, through a raw SDK-level loop (receive
// 10, delete the batch). It reports workman's tasks/s, SQS requests per
// task (receives + deletes + visibility changes) and heap allocations per
// task (the whole process's while the Manager runs, SDK included), the raw
// loop's tasks/s and the ratio, on testenv.BenchSQSEndpoint. Tracing is
// off, as by default (BenchmarkEmulatorNoopTraced has it on). Run with:
//
//	go test -run '^$' -bench EmulatorNoop -benchtime 1x ./pkg/workman/
func BenchmarkEmulatorNoop(b *testing.B) { benchEmulatorNoop(b, nil) }

// benchTasks is how many tasks the emulator benchmarks run (-bench-tasks;
// fewer on a slow emulator).
var benchTasksFlag = flag.Int("bench-tasks", 1000, "tasks of the emulator benchmarks")

func benchEmulatorNoop(b *testing.B, tracing func(queue.Queue, *Config) queue.Queue) {
	benchTasks := *benchTasksFlag
	cfg := testenv.AWS(b)
	meter := sqsqueue.NewMeter()
	// On the bench SQS (LocalStack under make bench): moto answers a
	// receive in time proportional to the queue's depth, and both loops
	// took nearly seven minutes there on a loaded machine.
	ep := testenv.BenchSQSEndpoint(b)
	client := cfg.SQS(meter.Option(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	ctx := context.Background()
	for range b.N {
		// Raw loop.
		work, _ := emuQueues(b, client, 30*time.Second)
		sendNoops(b, work, benchTasks, nil)
		start := time.Now()
		// Each call is bounded like workman's (CallTimeout), so a request
		// the emulator never answers costs both loops the same.
		call := func(f func(ctx context.Context) error) error {
			cctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
			defer cancel()
			return f(cctx)
		}
		for done := 0; done < benchTasks; {
			var msgs []*queue.Message
			err := call(func(ctx context.Context) (err error) {
				msgs, err = work.Receive(ctx, 10, time.Second)
				return err
			})
			if err != nil {
				b.Logf("raw receive: %v", err)
				continue
			}
			if len(msgs) == 0 {
				continue
			}
			if err := call(func(ctx context.Context) error { return work.Delete(ctx, msgs...) }); err != nil {
				b.Logf("raw delete: %v", err) // redelivered after the visibility timeout
				continue
			}
			done += len(msgs)
		}
		rawRate := float64(benchTasks) / time.Since(start).Seconds()

		// Workman.
		work, dlq := emuQueues(b, client, 30*time.Second)
		sendNoops(b, work, benchTasks, nil)
		var n atomic.Int64
		allDone := make(chan struct{})
		cfg := Config{
			Queues: []queue.Queue{work}, DeadLetter: dlq, Workers: 16,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
				if n.Add(1) == int64(benchTasks) {
					close(allDone)
				}
				return nil
			}),
		}
		if tracing != nil {
			cfg.Queues[0] = tracing(work, &cfg)
		}
		m, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		meter.Reset()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		rctx, cancel := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		start = time.Now()
		go func() { stopped <- m.Run(rctx) }()
		<-allDone
		elapsed := time.Since(start)
		runtime.ReadMemStats(&ms1)
		allocs := float64(ms1.Mallocs-ms0.Mallocs) / float64(benchTasks)
		cancel()
		if err := <-stopped; err != nil {
			b.Fatal(err)
		}
		snap := meter.Snapshot()
		reqs := snap["ReceiveMessage"] + snap["DeleteMessageBatch"] + snap["ChangeMessageVisibilityBatch"]
		rate := float64(benchTasks) / elapsed.Seconds()
		if d, _ := work.Depth(ctx); d.Total() != 0 {
			b.Fatalf("work queue not empty after the run: %+v", d)
		}
		b.ReportMetric(rate, "tasks/s")
		b.ReportMetric(rawRate, "raw-tasks/s")
		b.ReportMetric(rate/rawRate, "ratio")
		b.ReportMetric(float64(reqs)/float64(benchTasks), "req/task")
		b.ReportMetric(allocs, "allocs/task")
		b.Logf("workman %.0f tasks/s, raw loop %.0f tasks/s (ratio %.2f); requests %v = %.3f req/task; %.0f allocs/task",
			rate, rawRate, rate/rawRate, snap, float64(reqs)/float64(benchTasks), allocs)
	}
}
