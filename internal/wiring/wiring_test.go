package wiring

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

func memDeps(t *testing.T) *Deps {
	t.Helper()
	dir := t.TempDir()
	reg := &stores.Registry{Accounts: []stores.Account{{
		ID: "acme", Status: stores.StatusActive,
		Stores: []stores.Store{
			{ID: "1", Primary: true, Kind: storage.KindFS, Root: filepath.Join(dir, "s1")},
			{ID: "2", Kind: storage.KindFS, Root: filepath.Join(dir, "s2")},
		},
	}}}
	d, err := Memory(MemoryConfig{Registry: reg, Policies: policy.NewDir(filepath.Join(dir, "config")), ReportsDir: filepath.Join(dir, "reports")})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRegisterServesEveryType(t *testing.T) {
	d := memDeps(t)
	var wrapped []task.Type
	d.Wrap = func(ty task.Type, h processors.Handler) processors.Handler {
		wrapped = append(wrapped, ty)
		return h
	}
	mux, err := NewMux(d)
	if err != nil {
		t.Fatal(err)
	}
	got := mux.Types()
	want := slices.Clone(Types)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("types %v, want %v", got, want)
	}
	if !slices.Equal(wrapped, Types) {
		t.Fatalf("wrapped %v, want %v", wrapped, Types)
	}
	for _, ty := range Types {
		if n := mux.ProcessorName(ty); n == "" {
			t.Errorf("%s: no processor name", ty)
		}
	}
	// A NOOP task runs.
	if err := mux.Handle(context.Background(), task.New(task.TypeNoop, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestNewMuxReportsEveryMissingDependency(t *testing.T) {
	_, err := NewMux(&Deps{Queues: Queues{queue.KeyAudit: nil}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Stores", "Policies", "AuditLog", "Index", "BitLog", "Reports", "no audit queue", "no dup-high queue", "no bit queue", "no bit-error queue", "no bit-report queue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestMemoryQueuesRedriveToDeadLetter(t *testing.T) {
	d := memDeps(t)
	if len(d.Queues) != len(queue.AllKeys) {
		t.Fatalf("%d queues, want %d", len(d.Queues), len(queue.AllKeys))
	}
	for _, k := range queue.AllKeys {
		if q := d.MemQueue(k); q == nil || q.Name() != queue.Name(queue.DefaultPrefix, k) {
			t.Fatalf("queue %s: %v", k, q)
		}
	}
}

func TestMemoryRejectsS3Stores(t *testing.T) {
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "a", Status: stores.StatusActive,
		Stores: []stores.Store{{ID: "1", Primary: true, Kind: storage.KindS3, Bucket: "b"}}}}}
	_, err := Memory(MemoryConfig{Registry: reg, Policies: policy.NewDir(t.TempDir()), ReportsDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "a/1 is s3") {
		t.Fatalf("err = %v", err)
	}
}

func TestAWSRequiresDatabase(t *testing.T) {
	_, _, err := AWS(context.Background(), AWSConfig{})
	if err == nil || !strings.Contains(err.Error(), "database URL") || !strings.Contains(err.Error(), "AWSConfig.AWS") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewMuxNoopOnlyNeedsNothing(t *testing.T) {
	mux, err := NewMux(&Deps{}, task.TypeNoop)
	if err != nil {
		t.Fatal(err)
	}
	if got := mux.Types(); !slices.Equal(got, []task.Type{task.TypeNoop}) {
		t.Fatalf("types %v", got)
	}
	if _, err := NewMux(&Deps{}, "NOPE"); err == nil {
		t.Fatal("unknown type accepted")
	}
	mux, err = NewMux(memDeps(t), task.TypeBit, task.TypeBitReport)
	if err != nil {
		t.Fatal(err)
	}
	if got := mux.Types(); !slices.Equal(got, []task.Type{task.TypeBit, task.TypeBitReport}) {
		t.Fatalf("types %v", got)
	}
}

// TestChainOrder: the middleware Chain puts around the mux — the outer
// ones first, then Logging, Metrics and Recover — all see the task, and a
// panic becomes a counted, logged failure.
func TestChainOrder(t *testing.T) {
	var order []string
	outer := func(next processors.Handler) processors.Handler {
		return processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			order = append(order, "outer")
			return next.Handle(ctx, tk)
		})
	}
	obs := observerFunc(func(ty task.Type, result string) { order = append(order, "metrics:"+result) })
	var logs bytes.Buffer
	h := Chain(processors.HandlerFunc(func(context.Context, *task.Task) error {
		order = append(order, "handler")
		panic("boom")
	}), ChainConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Observer: obs, Outer: []processors.Middleware{outer}})
	err := h.Handle(context.Background(), task.New(task.TypeNoop, nil))
	var pe *processors.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a PanicError", err)
	}
	if want := []string{"outer", "handler", "metrics:panic"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if !strings.Contains(logs.String(), "result=panic") {
		t.Fatalf("log %q: no task line", logs.String())
	}
}

type observerFunc func(task.Type, string)

func (f observerFunc) TaskDone(ty task.Type, result string, _ time.Duration) { f(ty, result) }

func TestAWSNoopOnlyNeedsNoDatabase(t *testing.T) {
	_, _, err := AWS(context.Background(), AWSConfig{Types: []task.Type{task.TypeNoop}})
	if err == nil || strings.Contains(err.Error(), "database") {
		t.Fatalf("err = %v", err)
	}
}

func TestStateLocation(t *testing.T) {
	for _, tc := range []struct{ state, bucket, want string }{
		{"", "mill-state", "s3://mill-state/k.json"},
		{"/var/lib/p.json", "mill-state", "/var/lib/p.json"},
		{"s3://other/x.json", "", "s3://other/x.json"},
	} {
		if got, err := StateLocation(tc.state, tc.bucket, "k.json"); err != nil || got != tc.want {
			t.Errorf("StateLocation(%q, %q) = %q, %v; want %q", tc.state, tc.bucket, got, err, tc.want)
		}
	}
	if _, err := StateLocation("", "", "k.json"); err == nil {
		t.Error("no state and no bucket: no error")
	}
}
