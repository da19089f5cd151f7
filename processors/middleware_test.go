package processors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

func TestRecoverTurnsPanicIntoError(t *testing.T) {
	h := processors.Chain(processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		panic("boom")
	}), processors.Recover())
	err := h.Handle(context.Background(), task.New(task.TypeNoop, nil))
	var pe *processors.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || !bytes.Contains(pe.Stack, []byte("middleware_test.go")) {
		t.Fatalf("err = %#v", err)
	}
	if processors.IsPermanent(err) {
		t.Fatal("a panic must count as an ordinary failure, not a permanent one")
	}
	if r := processors.Result(context.Background(), err); r != processors.ResultPanic {
		t.Fatalf("Result = %q", r)
	}
}

func TestTimeoutPerType(t *testing.T) {
	var mu sync.Mutex
	deadlines := map[task.Type]time.Duration{}
	inner := processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := ctx.Deadline(); ok {
			deadlines[tk.Type] = time.Until(d)
		} else {
			deadlines[tk.Type] = -1
		}
		return nil
	})
	h := processors.Chain(inner, processors.Timeout(map[task.Type]time.Duration{task.TypeBit: time.Hour, task.TypeAudit: 0}, time.Minute))
	for _, ty := range []task.Type{task.TypeBit, task.TypeNoop, task.TypeAudit} {
		_ = h.Handle(context.Background(), task.New(ty, nil))
	}
	if d := deadlines[task.TypeBit]; d < 59*time.Minute || d > time.Hour {
		t.Errorf("BIT deadline in %v, want ~1h", d)
	}
	if d := deadlines[task.TypeNoop]; d < 59*time.Second || d > time.Minute {
		t.Errorf("NOOP deadline in %v, want ~1m (default)", d)
	}
	if d := deadlines[task.TypeAudit]; d != -1 {
		t.Errorf("AUDIT has a deadline (%v); 0 means none", d)
	}
}

func TestResultClassification(t *testing.T) {
	ctx := context.Background()
	dl, cancel := context.WithTimeout(ctx, -time.Second)
	defer cancel()
	cc, cancel2 := context.WithCancel(ctx)
	cancel2()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{ctx, nil, processors.ResultSuccess},
		{ctx, errors.New("x"), processors.ResultFailure},
		{ctx, processors.Permanentf("bad %d", 1), processors.ResultPermanent},
		{ctx, processors.RetryAfter(time.Minute, nil), processors.ResultRetryAfter},
		{dl, dl.Err(), processors.ResultTimeout},
		{cc, cc.Err(), processors.ResultCanceled},
		{ctx, processors.Release("paused"), processors.ResultReleased},
		// Released wins over the cancellation that stopped the task.
		{cc, fmt.Errorf("wrapped: %w", processors.Release("paused")), processors.ResultReleased},
	} {
		if got := processors.Result(c.ctx, c.err); got != c.want {
			t.Errorf("Result(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

type obs struct {
	mu  sync.Mutex
	got []string
}

func (o *obs) TaskDone(ty task.Type, result string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, string(ty)+"/"+result)
}

func TestLoggingAndMetrics(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	o := &obs{}
	fail := true
	h := processors.Chain(processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		if fail {
			return errors.New("nope")
		}
		return nil
	}), processors.Logging(logger), processors.Metrics(o))
	tk := task.New(task.TypeDup, map[string]string{task.KeyAccount: "acme", task.KeyStoreID: "1", task.KeySpaceID: "sp", task.KeyContentID: "a/b"})
	tk.Attempts = 2
	ctx := processors.WithQueue(context.Background(), "mill-dup-high")
	_ = h.Handle(ctx, tk)
	fail = false
	_ = h.Handle(ctx, tk)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines: %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"queue": "mill-dup-high", "task_type": "DUP", "result": "failure", "attempts": 2.0,
		"account": "acme", "store_id": "1", "space_id": "sp", "content_id": "a/b", "error": "nope", "level": "WARN"} {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v", k, rec[k], v)
		}
	}
	if _, ok := rec["elapsed_ms"]; !ok {
		t.Error("log has no elapsed_ms")
	}
	if !strings.Contains(lines[1], `"result":"success"`) {
		t.Errorf("second line: %s", lines[1])
	}
	if strings.Join(o.got, ",") != "DUP/failure,DUP/success" {
		t.Errorf("observed %v", o.got)
	}
}
