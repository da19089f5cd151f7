package sqsqueue_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// logLines decodes the JSON log lines written to b.
func logLines(t *testing.T, b *testbin.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// resendFixture is a queue on the emulator reached through a proxy that
// breaks the answers to the first SendMessageBatch requests
// (testenv.BreakSends), logging as JSON to logs, with a meter on its client
// (at most maxAttempts attempts a call), and the same queue reached
// directly.
type resendFixture struct {
	proxy  *faultproxy.HTTP
	q      *sqsqueue.Queue
	direct *sqsqueue.Queue
	meter  *sqsqueue.Meter
	logs   *testbin.Buffer
}

func newResendFixture(t *testing.T, breaks, maxAttempts int) resendFixture {
	t.Helper()
	c, _, prefix := client(t)
	proxy, viaProxy := testenv.BreakSends(t, breaks)
	ctx := context.Background()
	name := prefix + "resend"
	if _, err := (setup.Queue{Client: c, QueueName: name, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	meter := sqsqueue.NewMeter()
	pc := testenv.AWS(t).SQS(meter.Option(), viaProxy, func(o *sqs.Options) { o.RetryMaxAttempts = maxAttempts })
	logs := &testbin.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	q, err := sqsqueue.Open(ctx, pc, name, sqsqueue.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := sqsqueue.Open(ctx, c, name, sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	meter.Reset()
	return resendFixture{proxy: proxy, q: q, direct: direct, meter: meter, logs: logs}
}

// drain receives the queue's messages (directly) until want have come or
// 20 s have passed, and returns message ID → body.
func (f resendFixture) drain(t *testing.T, want int) map[string]string {
	t.Helper()
	ctx := context.Background()
	got := map[string]string{}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ms, err := f.direct.Receive(ctx, queue.MaxBatch, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			got[m.ID] = string(m.Body)
		}
	}
	return got
}

func entriesOf(bodies ...string) []queue.SendEntry {
	e := make([]queue.SendEntry, len(bodies))
	for i, b := range bodies {
		e[i].Body = []byte(b)
	}
	return e
}

// TestSendRetriedIsLogged: a SendMessageBatch whose first answer broke
// after the emulator stored the messages is sent again by the SDK, and
// the queue holds each message twice. The send logs one Warn line naming
// the queue, the action, attempts=2, the entries and the message IDs of
// the attempt that answered, so that an operator can tell the copies
// apart; the meter counts both attempts.
func TestSendRetriedIsLogged(t *testing.T) {
	f := newResendFixture(t, 1, 3)
	bodies := []string{"resent-a", "resent-b", "resent-c"}
	if err := f.q.Send(context.Background(), entriesOf(bodies...)...); err != nil {
		t.Fatal(err)
	}
	if f.proxy.Breaks() != 1 {
		t.Fatalf("%d answers broken, want 1", f.proxy.Breaks())
	}
	lines := logLines(t, f.logs)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["level"] != "WARN" || l["queue"] != f.q.Name() || l["action"] != "SendMessageBatch" ||
		l["attempts"] != float64(2) || l["entries"] != float64(len(bodies)) {
		t.Fatalf("log line %v: want level WARN, queue %s, action SendMessageBatch, attempts 2, entries %d", l, f.q.Name(), len(bodies))
	}
	if s, _ := l["first_error"].(string); s == "" {
		t.Fatalf("log line %v does not say why the SDK sent again", l)
	}
	if _, ok := l["error"]; ok {
		t.Fatalf("log line %v has an error for a send that succeeded", l)
	}
	raw, _ := l["message_ids"].([]any)
	var logged []string
	for _, id := range raw {
		s, _ := id.(string)
		logged = append(logged, s)
	}
	if got := f.meter.Snapshot()["SendMessageBatch"]; got != 2 {
		t.Fatalf("meter counted %d SendMessageBatch requests, want 2 (both attempts)", got)
	}

	// The queue holds every body twice; one copy of each has a message
	// ID the line names, the other does not.
	got := f.drain(t, 2*len(bodies))
	if len(got) != 2*len(bodies) || len(logged) != len(bodies) {
		t.Fatalf("queue holds %v, line names %v: want each of %v twice, one ID of each named", got, logged, bodies)
	}
	for _, b := range bodies {
		var named, other int
		for id, body := range got {
			if body != b {
				continue
			}
			if slices.Contains(logged, id) {
				named++
			} else {
				other++
			}
		}
		if named != 1 || other != 1 {
			t.Fatalf("body %q: %d copies named by the line, %d not; want 1 and 1 (queue %v, line %v)", b, named, other, got, logged)
		}
	}
}

// TestSendNotRetriedNotLogged: through the same proxy, unarmed, a send
// logs nothing and makes one request.
func TestSendNotRetriedNotLogged(t *testing.T) {
	f := newResendFixture(t, 0, 3)
	if err := f.q.Send(context.Background(), entriesOf("once-a", "once-b")...); err != nil {
		t.Fatal(err)
	}
	if lines := logLines(t, f.logs); len(lines) != 0 {
		t.Fatalf("a send made once logged %v", lines)
	}
	if got := f.meter.Snapshot()["SendMessageBatch"]; got != 1 {
		t.Fatalf("meter counted %d SendMessageBatch requests, want 1", got)
	}
	if got := f.drain(t, 2); len(got) != 2 {
		t.Fatalf("queue holds %v, want the 2 messages once", got)
	}
}

// TestSendFailedAfterRetriesIsLogged: a send whose every answer broke
// fails, yet each attempt was stored; the line says so (attempts=2, the
// call's error, the entries by count: no message IDs came back).
func TestSendFailedAfterRetriesIsLogged(t *testing.T) {
	f := newResendFixture(t, 2, 2)
	err := f.q.Send(context.Background(), entriesOf("lost-answer")...)
	if err == nil {
		t.Fatal("a send whose every answer broke succeeded")
	}
	lines := logLines(t, f.logs)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["attempts"] != float64(2) || l["entries"] != float64(1) || l["action"] != "SendMessageBatch" {
		t.Fatalf("log line %v: want attempts 2, entries 1", l)
	}
	if s, _ := l["error"].(string); s == "" {
		t.Fatalf("log line %v does not carry the call's error (%v)", l, err)
	}
	if _, ok := l["message_ids"]; ok {
		t.Fatalf("log line %v names message IDs of a send that got none", l)
	}
	if got := f.drain(t, 2); len(got) != 2 {
		t.Fatalf("queue holds %v, want the message twice (once per attempt)", got)
	}
}

// TestConfigLoggerDefault: a Config without a Logger logs to
// slog.Default().
func TestConfigLoggerDefault(t *testing.T) {
	if got := (sqsqueue.Config{}).WithDefaults().Logger; got != slog.Default() {
		t.Fatalf("default Logger %p, want slog.Default() %p", got, slog.Default())
	}
}
