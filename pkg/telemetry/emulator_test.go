package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/telemetry"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/storagestats"
)

// oneStore serves one S3 store, "acme"/"1".
type oneStore struct {
	reg  *stores.Registry
	prov storage.Provider
}

func (f *oneStore) Open(_ context.Context, account, storeID string) (storage.Provider, error) {
	if _, err := f.reg.Store(account, storeID); err != nil {
		return nil, err
	}
	return f.prov, nil
}

func (f *oneStore) Registry() *stores.Registry { return f.reg }

// emulator is a traced fleet on the emulator and PostgreSQL: a work queue
// and a dead-letter queue opened the way the binaries open them
// (wiring.Claims with a claims bucket and Tracing), Workman in process
// running the real STORAGE_STATS processor over an S3 store, its
// statistics in PostgreSQL through a traced pool.
type emulator struct {
	tr        *telemetry.Tracing
	exp       *tracetest.InMemoryExporter
	work, dlq queue.Queue
	raw       queue.Queue // the work queue without tracing
	run       func(t *testing.T, tasks int)
}

func newEmulator(t *testing.T) *emulator {
	t.Helper()
	ctx := t.Context()
	tr, exp := newTracing(t)
	base := testenv.AWS(t)
	cfg := *base
	cfg.AWS = base.AWS.Copy()
	tr.AWS(&cfg.AWS)

	s3c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	prefix := testenv.Prefix(t)
	bucket, claimsBucket := prefix+"items", prefix+"claims"
	for _, b := range []string{bucket, claimsBucket} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
	st, err := s3store.New(s3c, s3store.Config{Bucket: bucket, Prefix: "acme/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		data := bytes.Repeat([]byte{byte(i)}, 10+i)
		if _, err := st.Put(ctx, "photos", fmt.Sprint("item-", i), bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
	}

	db, err := milldb.Open(ctx, testenv.Schema(t), milldb.Config{Tracer: tr.PGX()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}

	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	claims := &wiring.Claims{Bucket: claimsBucket, Prefix: "claims/", Tracing: tr}
	open := func(name string, claims *wiring.Claims) queue.Queue {
		if _, err := (setup.Queue{Client: sqsc, QueueName: prefix + name, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		q, err := claims.Open(ctx, sqsc, s3c, prefix+name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	e := &emulator{tr: tr, exp: exp, work: open("bit", claims), dlq: open("dead-letter", claims),
		raw: open("bit", &wiring.Claims{Bucket: claimsBucket, Prefix: "claims/"})}
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive,
		Stores: []stores.Store{{ID: "1", Primary: true, Kind: storage.KindS3, Bucket: bucket, Prefix: "acme/"}}}}}
	p, err := storagestats.New(storagestats.Config{Stores: &oneStore{reg: reg, prov: st}, Stats: pgspacestats.New(db.Pool),
		Continue: e.work, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	e.run = func(t *testing.T, tasks int) {
		var done atomic.Int64
		all := make(chan struct{})
		m, err := workman.New(workman.Config{
			Queues: []queue.Queue{e.work}, DeadLetter: e.dlq, Workers: 2, Tracing: tr,
			IdlePollWait: time.Second, Logger: slog.New(slog.DiscardHandler),
			Handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
				err := p.Handle(ctx, tk)
				if done.Add(1) == int64(tasks) {
					close(all)
				}
				return err
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		runUntil(t, m, all, "the tasks to be handled")
	}
	return e
}

// runUntil runs m until done is closed (at most a minute: a bound, not a
// wait; the test ends on its signal), then stops it.
func runUntil(t *testing.T, m *workman.Manager, done <-chan struct{}, what string) {
	t.Helper()
	rctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(rctx) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("timed out waiting for %s", what)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestTraceFromSendToS3OnEmulator: a producer's send of a STORAGE_STATS
// task, the SQS hop (the real queue, claim check around it), Workman's
// receive and run, the processor's S3 listing and its PostgreSQL writes
// are one trace.
func TestTraceFromSendToS3OnEmulator(t *testing.T) {
	e := newEmulator(t)
	body, err := task.Encode(task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos"}.Task(), task.FormatProperties)
	if err != nil {
		t.Fatal(err)
	}
	ctx, pass := e.tr.Tracer().Start(context.Background(), "producer pass")
	if err := e.work.Send(ctx, queue.SendEntry{Body: body}); err != nil {
		t.Fatal(err)
	}
	pass.End()
	e.run(t, 1)

	spans := e.exp.GetSpans()
	id := pass.SpanContext().TraceID()
	inTrace := map[string][]tracetest.SpanStub{}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			inTrace[s.Name] = append(inTrace[s.Name], s)
			byID[s.SpanContext.SpanID()] = s
		}
	}
	send, process := one(t, inTrace, e.work.Name()+" send"), one(t, inTrace, e.work.Name()+" process")
	if process.Parent.SpanID() != send.SpanContext.SpanID() || !process.Parent.IsRemote() {
		t.Errorf("process span's parent %v (remote %v), want the send span %v across SQS",
			process.Parent.SpanID(), process.Parent.IsRemote(), send.SpanContext.SpanID())
	}
	// The processor's calls descend from the process span.
	descends := func(s tracetest.SpanStub) bool {
		for p := s.Parent; p.IsValid(); {
			if p.SpanID() == process.SpanContext.SpanID() {
				return true
			}
			up, ok := byID[p.SpanID()]
			if !ok {
				return false
			}
			p = up.Parent
		}
		return false
	}
	var s3Calls, pgCalls []string
	for name, ss := range inTrace {
		for _, s := range ss {
			switch {
			case strings.HasPrefix(name, "S3.") && descends(s):
				s3Calls = append(s3Calls, name)
			case strings.HasPrefix(name, "postgresql ") && descends(s):
				pgCalls = append(pgCalls, name)
			}
		}
	}
	if len(s3Calls) == 0 || len(pgCalls) == 0 {
		t.Errorf("processor calls in the trace under the process span: S3 %v, PostgreSQL %v; want both", s3Calls, pgCalls)
	}
	// The SQS request that carried the message is in the trace too.
	if ss := inTrace["SQS.SendMessageBatch"]; len(ss) == 0 && len(inTrace["SQS.SendMessage"]) == 0 {
		t.Errorf("no SQS send call in the trace; spans %v", names(inTrace))
	}
	// The receive span links to the message's context.
	linked := false
	for _, s := range spans {
		if s.Name == e.work.Name()+" receive" {
			for _, l := range s.Links {
				linked = linked || l.SpanContext.SpanID() == send.SpanContext.SpanID()
			}
		}
	}
	if !linked {
		t.Error("no receive span links to the message's send span")
	}
	if d, _ := e.dlq.Depth(context.Background()); d.Total() != 0 {
		t.Errorf("dead-letter queue holds %+v", d)
	}
}

// TestHostileTraceparentOnEmulator: a task whose traceparent attribute is
// malformed, or sent with many attributes, runs as any other: its span is
// a new root, nothing is dead-lettered, and the task is done.
func TestHostileTraceparentOnEmulator(t *testing.T) {
	e := newEmulator(t)
	body, err := task.Encode(task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos"}.Task(), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{"00-zzzz", "00-00000000000000000000000000000000-0000000000000000-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-" + strings.Repeat("ä", 100)}
	for _, v := range hostile {
		if err := e.raw.Send(context.Background(), queue.SendEntry{Body: body, Attributes: map[string]string{telemetry.AttrTraceparent: v}}); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, len(hostile))
	for _, s := range e.exp.GetSpans() {
		if s.Name == e.work.Name()+" process" {
			if s.Parent.IsValid() {
				t.Errorf("process span has parent %v from a hostile traceparent", s.Parent)
			}
			if s.Status.Code == codes.Error {
				t.Errorf("process span status %v: %s", s.Status.Code, s.Status.Description)
			}
		}
	}
	if d, _ := e.dlq.Depth(context.Background()); d.Total() != 0 {
		t.Errorf("dead-letter queue holds %+v", d)
	}
}

func one(t *testing.T, m map[string][]tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	if len(m[name]) != 1 {
		t.Fatalf("%d spans %q in the trace, want 1; spans: %v", len(m[name]), name, names(m))
	}
	return m[name][0]
}

func names(m map[string][]tracetest.SpanStub) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}
