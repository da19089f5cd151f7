package console_test

import (
	"context"
	"fmt"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
)

// BenchmarkDeadLetterFirstPage puts MILL_BENCH_DLQ_LETTERS (default 5,000)
// dead letters on a dead-letter queue of the emulator and measures the
// dead-letter page of a console that starts: when its background scan
// (started by Run) has seen a page's worth, how long the first page takes
// to arrive (first-page-ms; the acceptance bound is 2 s); how long after
// the start that was (cold-first-page-ms) against the same run's raw SDK
// baseline of receiving a page's worth (50 messages, raw-50-ms); and, over
// the scan's first MILL_BENCH_DLQ_WINDOW (default 30 s) or the whole scan
// if shorter, its SQS requests per dead letter (req/letter) and pace
// (letters/s). The queue is on MILL_BENCH_SQS_ENDPOINT when it is set
// (scripts/bench.sh sets it to LocalStack when LocalStack answers): moto
// answers a receive in time proportional to the queue's depth (about 2 s
// at 5,000), so a cold start there measures moto (15.5 s to a page's
// worth, the raw SDK 27.5 s); LocalStack's SQS, like SQS, answers in
// milliseconds.
func BenchmarkDeadLetterFirstPage(b *testing.B) {
	n := envInt(b, "MILL_BENCH_DLQ_LETTERS", 5000)
	window := time.Duration(envInt(b, "MILL_BENCH_DLQ_WINDOW", 30)) * time.Second
	cfg := testenv.AWS(b)
	meter := sqsqueue.NewMeter()
	// The dead-letter queue's SQS: MILL_BENCH_SQS_ENDPOINT (make bench:
	// LocalStack when it answers), else the emulator's.
	ep := testenv.BenchSQSEndpoint(b)
	at := func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) }
	api, plain := cfg.SQS(meter.Option(), at), cfg.SQS(at)
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, plain, prefix)
	ctx := context.Background()
	name := queue.Name(prefix, queue.KeyDeadLetter)
	out, err := plain.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		b.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	dlq, err := sqsqueue.Open(ctx, plain, name, sqsqueue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, dlq, n)

	var firstMs, coldMs, rawMs, reqs, pace float64
	for range b.N {
		// The baseline: a page's worth received with raw SDK calls, then
		// made visible again.
		start := time.Now()
		var held []*queue.Message
		for len(held) < dlPage {
			r, err := plain.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30})
			if err != nil || len(r.Messages) == 0 {
				b.Fatalf("raw receive: %v (%d so far)", err, len(held))
			}
			for _, m := range r.Messages {
				held = append(held, &queue.Message{ReceiptHandle: aws.ToString(m.ReceiptHandle)})
			}
		}
		rawMs += float64(time.Since(start).Milliseconds())
		if err := dlq.Release(ctx, held...); err != nil {
			b.Fatal(err)
		}

		// A console starts; its scan starts with it.
		srv, c := benchConsole(b, api, plain, prefix)
		rctx, stop := context.WithCancel(ctx)
		meter.Reset()
		start = time.Now()
		go c.Run(rctx)
		for c.DeadLettersSeenForTest() < dlPage {
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("the scan saw %d dead letters in 5 minutes", c.DeadLettersSeenForTest())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cold := time.Since(start)
		t0 := time.Now()
		body := get(b, srv.URL+"/dead-letters")
		first := time.Since(t0)
		if rows := strings.Count(body, `<tr id="dl-`); rows != dlPage {
			b.Fatalf("the first page has %d rows, want %d", rows, dlPage)
		}
		// The scan's cost: over the window, or the whole scan.
		for time.Since(start) < window && c.DeadLettersSeenForTest() < n {
			time.Sleep(100 * time.Millisecond)
		}
		seen, elapsed := c.DeadLettersSeenForTest(), time.Since(start)
		perLetter := float64(meter.Total()) / float64(seen)
		stop()
		c.Close()
		srv.Close()
		firstMs += float64(first.Milliseconds())
		coldMs += float64(cold.Milliseconds())
		reqs += perLetter
		pace += float64(seen) / elapsed.Seconds()
		b.Logf("%d dead letters: a page's worth seen %v after the start, first page in %v; the scan saw %d in %v, %.2f requests a letter",
			n, cold.Round(time.Millisecond), first.Round(time.Millisecond), seen, elapsed.Round(time.Millisecond), perLetter)
	}
	iters := float64(b.N)
	b.ReportMetric(firstMs/iters, "first-page-ms")
	b.ReportMetric(2000, "bound-ms") // the acceptance bound
	b.ReportMetric(coldMs/iters, "cold-first-page-ms")
	b.ReportMetric(rawMs/iters, "raw-50-ms")
	b.ReportMetric(coldMs/rawMs, "cold/raw")
	b.ReportMetric(reqs/iters, "req/letter")
	b.ReportMetric(pace/iters, "letters/s")
	b.ReportMetric(float64(n), "letters")
}

// dlPage is the dead-letter page's size.
const dlPage = 50

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// fill puts n dead letters on q, eight senders at once, and waits until
// SQS counts them.
func fill(b *testing.B, q *sqsqueue.Queue, n int) {
	b.Helper()
	ctx := context.Background()
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for lo := range next {
				var es []queue.SendEntry
				for i := lo; i < min(lo+queue.MaxBatch, n); i++ {
					body, _ := task.Encode(task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: fmt.Sprintf("img-%05d.jpg", i)}.Task(), task.FormatJSON)
					en, err := deadletter.Encode(&deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: "dup: copy: AccessDenied",
						TaskType: task.TypeDup, Processor: "dup", SourceQueue: "mill-dup-high", Attempts: 3, Worker: "w", Time: time.Now().Add(-time.Duration(i) * time.Second)})
					if err != nil {
						errs <- err
						return
					}
					es = append(es, en)
				}
				if err := q.Send(ctx, es...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for lo := 0; lo < n; lo += queue.MaxBatch {
		next <- lo
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := q.Depth(ctx)
		if err == nil && d.Visible >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the queue holds %+v (%v), want %d visible", d, err, n)
		}
		time.Sleep(time.Second)
	}
}

// benchConsole is a console on the emulator's queues under prefix that has
// not scanned the dead-letter queue yet, its scan's hold millctl console's
// default (a shorter hold is extended sooner: on moto, where every request
// costs in proportion to the queue's depth, a 30 s hold nearly doubled the
// time to a first page).
// (api reads the dead-letter queue; plain the queues' depths).
func benchConsole(b *testing.B, api, plain *sqs.Client, prefix string) (*httptest.Server, *console.Server) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	files, err := fsconfigstore.New(dir, 0)
	if err != nil {
		b.Fatal(err)
	}
	changes, err := fschangelog.New(filepath.Join(dir, "changes"))
	if err != nil {
		b.Fatal(err)
	}
	dead, err := (&wiring.Claims{}).DeadLetters(ctx, api, nil, "", deadletter.Config{Prefix: prefix, Hold: console.DefaultDeadLetterHold})
	if err != nil {
		b.Fatal(err)
	}
	c, err := console.New(console.Config{
		Auth: auth.Anonymous{Role: auth.RoleViewer}, Files: files, Changes: changes, DeadLetters: dead,
		Queues: queuestats.New(prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
			return sqsqueue.Open(ctx, plain, name, sqsqueue.Config{})
		}, nil),
		SampleEvery: time.Hour, HistoryWindow: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	return httptest.NewServer(c.Handler()), c
}

func get(b *testing.B, url string) string {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return string(body)
}
