package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

// Options describe the queue a subtest needs.
type Options struct {
	// VisibilityTimeout of the queue; 0 = Harness.Visibility.
	VisibilityTimeout time.Duration
	// MaxReceiveCount > 0 asks for a dead-letter queue too, with redrive
	// after this many receives.
	MaxReceiveCount int
}

// Fixture is one fresh queue made for one subtest.
type Fixture struct {
	Queue queue.Queue
	// DeadLetter is the redrive target when Options.MaxReceiveCount > 0.
	DeadLetter queue.Queue
	// Advance lets d of the queue's time pass: a fake clock's Advance, or
	// a real wait. It must be safe to call from the subtest's goroutine
	// while other subtests run.
	Advance func(d time.Duration)
}

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other fields
// are capability flags that say how an implementation differs from the
// exact model.
type Harness struct {
	// New makes a fresh queue for one subtest; it is called once per
	// subtest, possibly from parallel subtests, and cleans up what it makes
	// through t.
	New func(t *testing.T, o Options) Fixture
	// FakeTime: Advance is instant and exact, and nothing happens between
	// calls (no real-time polling needed; a Receive with a wait only
	// returns early).
	FakeTime bool
	// Visibility is the visibility timeout (and delay) the suite uses:
	// short for a real service (1–2 s), anything for fake time.
	Visibility time.Duration
	// Slack is how late a time-driven change (visibility expiry, delay,
	// redrive) may show up after Advance; 0 for fake time.
	Slack time.Duration
	// ApproximateDepth: Depth may lag behind; the suite polls for the
	// expected value until Slack has passed.
	ApproximateDepth bool
	// MaxMessageBytes is the largest message Send accepts (body plus
	// attribute names and values); 0 = 256 KiB.
	MaxMessageBytes int
}

// Run runs the conformance suite. Subtests run in parallel.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("queuetest: Harness.New is nil")
	}
	if h.Visibility <= 0 {
		t.Fatal("queuetest: Harness.Visibility must be set")
	}
	if h.MaxMessageBytes <= 0 {
		h.MaxMessageBytes = 256 << 10
	}
	s := &suite{h: h}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"RoundTrip", s.roundTrip},
		{"Batches", s.batches},
		{"Groups", s.groups},
		{"InvalidEntries", s.invalidEntries},
		{"RedeliveryAfterVisibilityTimeout", s.redelivery},
		{"ExtendedVisibility", s.extendedVisibility},
		{"Release", s.release},
		{"ReceiveWithVisibility", s.receiveWithVisibility},
		{"Purge", s.purge},
		{"Delay", s.delay},
		{"Redrive", s.redrive},
		{"Depth", s.depth},
		{"LongPollEndsOnArrival", s.longPollArrival},
		{"ReceiveCancelled", s.receiveCancelled},
		{"DeleteGone", s.deleteGone},
		{"StaleReceiptsInBatches", s.staleInBatches},
		{"VisibilityTimeout", s.visibilityTimeout},
		{"Concurrent", s.concurrent},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

type suite struct {
	h Harness
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pollWait is the long-poll wait used while polling a real service.
func (s *suite) pollWait() time.Duration {
	if s.h.FakeTime {
		return 0
	}
	return time.Second
}

// receiveN receives until it has want messages or, for a real service, until
// within (+Slack) has passed; with fake time it receives until the queue
// answers empty.
func (s *suite) receiveN(t *testing.T, q queue.Queue, want int, within time.Duration) []*queue.Message {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(within + s.h.Slack)
	var got []*queue.Message
	for len(got) < want {
		ms, err := q.Receive(ctx, min(want-len(got), queue.MaxBatch), s.pollWait())
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(ms) > queue.MaxBatch {
			t.Fatalf("receive returned %d messages, more than queue.MaxBatch", len(ms))
		}
		got = append(got, ms...)
		if len(ms) == 0 && (s.h.FakeTime || time.Now().After(deadline)) {
			break
		}
	}
	return got
}

func (s *suite) receiveOne(t *testing.T, q queue.Queue, within time.Duration) *queue.Message {
	t.Helper()
	ms := s.receiveN(t, q, 1, within)
	if len(ms) != 1 {
		t.Fatalf("received %d messages, want 1", len(ms))
	}
	return ms[0]
}

// expectEmpty asserts that nothing is receivable right now.
func (s *suite) expectEmpty(t *testing.T, q queue.Queue, why string) {
	t.Helper()
	ms, err := q.Receive(ctxFor(t), queue.MaxBatch, 0)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(ms) != 0 {
		t.Fatalf("%s: received %d messages (first %q, receive count %d), want none", why, len(ms), ms[0].Body, ms[0].ReceiveCount)
	}
}

func send(t *testing.T, q queue.Queue, entries ...queue.SendEntry) {
	t.Helper()
	if err := q.Send(ctxFor(t), entries...); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func body(s string) queue.SendEntry { return queue.SendEntry{Body: []byte(s)} }

func (s *suite) vis() time.Duration { return s.h.Visibility }

func (s *suite) roundTrip(t *testing.T) {
	f := s.h.New(t, Options{})
	var ascii strings.Builder
	for c := 0x20; c < 0x7f; c++ {
		ascii.WriteByte(byte(c))
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (s.h.MaxMessageBytes-1024)/16)
	bodies := [][]byte{
		[]byte("hello"),
		[]byte("héllo wörld ✓ 日本語 🚀 \U0010FFFD \uE000 \uFFFD"),
		[]byte("tab\there\nnewline\r\ncrlf  trailing space "),
		[]byte(ascii.String()),
		[]byte(`{"v":1,"type":"NOOP","props":{"a":"<&>'\""}}`),
		big,
	}
	var entries []queue.SendEntry
	for i, b := range bodies {
		entries = append(entries, queue.SendEntry{Body: b, Attributes: map[string]string{"index": fmt.Sprint(i), "note": "ünï ✓"}})
	}
	start := time.Now()
	send(t, f.Queue, entries...)
	got := s.receiveN(t, f.Queue, len(bodies), 5*time.Second)
	if len(got) != len(bodies) {
		t.Fatalf("received %d messages, want %d", len(got), len(bodies))
	}
	seen := map[string]bool{}
	for _, m := range got {
		var i int
		if _, err := fmt.Sscan(m.Attributes["index"], &i); err != nil || i < 0 || i >= len(bodies) {
			t.Fatalf("attribute index = %q", m.Attributes["index"])
		}
		if !bytes.Equal(m.Body, bodies[i]) {
			t.Errorf("body %d changed in transit: got %d bytes %.60q, want %d bytes %.60q", i, len(m.Body), m.Body, len(bodies[i]), bodies[i])
		}
		if m.Attributes["note"] != "ünï ✓" {
			t.Errorf("attribute note = %q", m.Attributes["note"])
		}
		if m.ID == "" || m.ReceiptHandle == "" {
			t.Errorf("message %d: empty ID or receipt handle", i)
		}
		if seen[m.ID] {
			t.Errorf("message ID %s delivered twice", m.ID)
		}
		seen[m.ID] = true
		if m.ReceiveCount != 1 {
			t.Errorf("message %d: ReceiveCount %d, want 1", i, m.ReceiveCount)
		}
		if m.SentAt.IsZero() || (!s.h.FakeTime && (m.SentAt.Before(start.Add(-time.Minute)) || m.SentAt.After(time.Now().Add(time.Minute)))) {
			t.Errorf("message %d: SentAt %v, sent at about %v", i, m.SentAt, start)
		}
	}
	if err := f.Queue.Delete(ctxFor(t), got...); err != nil {
		t.Fatalf("delete: %v", err)
	}
	s.expectEmpty(t, f.Queue, "after delete")
}

// groups: a message sent with a Group comes back with it, one sent without
// comes back with none, and a Group SQS would refuse fails its entry with
// queue.ErrInvalid while the rest of the batch is sent.
func (s *suite) groups(t *testing.T) {
	f := s.h.New(t, Options{})
	long := strings.Repeat("g", queue.MaxGroupLen)
	err := f.Queue.Send(ctxFor(t),
		queue.SendEntry{Body: []byte("a"), Group: "acme-1.org_X"},
		queue.SendEntry{Body: []byte("b")},
		queue.SendEntry{Body: []byte("c"), Group: long},
		queue.SendEntry{Body: []byte("bad1"), Group: "two words"},
		queue.SendEntry{Body: []byte("bad2"), Group: "ünï"},
		queue.SendEntry{Body: []byte("bad3"), Group: long + "g"},
	)
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 3 {
		t.Fatalf("send: %v, want entries 3, 4 and 5 failed", err)
	}
	for _, i := range []int{3, 4, 5} {
		if !errors.Is(be.Failed[i], queue.ErrInvalid) {
			t.Errorf("entry %d: %v, want queue.ErrInvalid", i, be.Failed[i])
		}
	}
	got := s.receiveN(t, f.Queue, 3, 5*time.Second)
	want := map[string]string{"a": "acme-1.org_X", "b": "", "c": long}
	if len(got) != len(want) {
		t.Fatalf("received %d messages, want %d", len(got), len(want))
	}
	for _, m := range got {
		g, ok := want[string(m.Body)]
		if !ok || m.Group != g {
			t.Errorf("message %q: group %q, want %q", m.Body, m.Group, g)
		}
	}
	if err := f.Queue.Delete(ctxFor(t), got...); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func (s *suite) batches(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 4 * s.vis()})
	ctx := ctxFor(t)
	const n = 25
	entries := make([]queue.SendEntry, n)
	for i := range entries {
		entries[i] = body(fmt.Sprintf("m%02d", i))
	}
	send(t, f.Queue, entries...)
	// n above MaxBatch is clamped, not an error.
	var got []*queue.Message
	deadline := time.Now().Add(10*time.Second + s.h.Slack)
	for len(got) < n {
		ms, err := f.Queue.Receive(ctx, 3*queue.MaxBatch, s.pollWait())
		if err != nil {
			t.Fatalf("receive with n > MaxBatch: %v", err)
		}
		if len(ms) > queue.MaxBatch {
			t.Fatalf("receive returned %d messages, more than queue.MaxBatch", len(ms))
		}
		got = append(got, ms...)
		if len(ms) == 0 && (s.h.FakeTime || time.Now().After(deadline)) {
			break
		}
	}
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	changes := make([]queue.VisibilityChange, n)
	for i, m := range got {
		changes[i] = queue.VisibilityChange{Message: m, Timeout: 8 * s.vis()}
	}
	if err := f.Queue.ChangeVisibility(ctx, changes...); err != nil {
		t.Fatalf("change visibility of %d: %v", n, err)
	}
	if err := f.Queue.Delete(ctx, got...); err != nil {
		t.Fatalf("delete %d: %v", n, err)
	}
	s.expectDepth(t, f.Queue, queue.Depth{})
	s.expectEmpty(t, f.Queue, "after deleting all")
}

func (s *suite) invalidEntries(t *testing.T) {
	f := s.h.New(t, Options{})
	ctx := ctxFor(t)
	err := f.Queue.Send(ctx,
		body("fine"),
		queue.SendEntry{Body: bytes.Repeat([]byte("x"), s.h.MaxMessageBytes+1)},
		queue.SendEntry{Body: []byte("late"), Delay: queue.MaxDelay + time.Minute},
		queue.SendEntry{Body: []byte("early"), Delay: -time.Second},
	)
	var be *queue.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("send: %v, want a *queue.BatchError", err)
	}
	if len(be.Failed) != 3 || be.Failed[0] != nil {
		t.Fatalf("failed entries %v, want 1, 2 and 3", be)
	}
	if !errors.Is(be.Failed[1], queue.ErrTooLarge) {
		t.Errorf("oversized entry: %v, want queue.ErrTooLarge", be.Failed[1])
	}
	for _, i := range []int{2, 3} {
		if !errors.Is(be.Failed[i], queue.ErrInvalid) {
			t.Errorf("entry %d with a bad delay: %v, want queue.ErrInvalid", i, be.Failed[i])
		}
	}
	if got := queue.FailedIndexes(err, 4); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("FailedIndexes = %v", got)
	}
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	if string(m.Body) != "fine" {
		t.Fatalf("received %q, want the valid entry", m.Body)
	}
	err = f.Queue.ChangeVisibility(ctx, queue.VisibilityChange{Message: m, Timeout: queue.MaxVisibility + time.Hour})
	if !errors.Is(err, queue.ErrInvalid) || fmt.Sprint(queue.FailedIndexes(err, 1)) != "[0]" {
		t.Errorf("visibility above MaxVisibility: %v, want queue.ErrInvalid at index 0", err)
	}
}

func (s *suite) redelivery(t *testing.T) {
	f := s.h.New(t, Options{})
	send(t, f.Queue, body("again"))
	first := s.receiveOne(t, f.Queue, 5*time.Second)
	if first.ReceiveCount != 1 {
		t.Fatalf("first ReceiveCount %d", first.ReceiveCount)
	}
	s.expectEmpty(t, f.Queue, "within the visibility timeout")
	f.Advance(s.vis())
	second := s.receiveOne(t, f.Queue, s.vis())
	if second.ID != first.ID || string(second.Body) != "again" {
		t.Fatalf("redelivered %s %q, want %s", second.ID, second.Body, first.ID)
	}
	if second.ReceiveCount != 2 {
		t.Errorf("ReceiveCount %d after redelivery, want 2", second.ReceiveCount)
	}
	if second.ReceiptHandle == first.ReceiptHandle {
		t.Error("a redelivery must carry a new receipt handle")
	}
	if err := f.Queue.Delete(ctxFor(t), second); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) extendedVisibility(t *testing.T) {
	f := s.h.New(t, Options{})
	send(t, f.Queue, body("long task"))
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	if err := f.Queue.ChangeVisibility(ctxFor(t), queue.VisibilityChange{Message: m, Timeout: 3 * s.vis()}); err != nil {
		t.Fatalf("change visibility: %v", err)
	}
	f.Advance(s.vis() + s.h.Slack)
	s.expectEmpty(t, f.Queue, "after the original timeout, within the extension")
	f.Advance(2*s.vis() - s.h.Slack)
	again := s.receiveOne(t, f.Queue, s.vis())
	if again.ID != m.ID || again.ReceiveCount != 2 {
		t.Fatalf("after the extension: %s receive count %d, want %s count 2", again.ID, again.ReceiveCount, m.ID)
	}
}

func (s *suite) release(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 10 * s.vis()})
	send(t, f.Queue, body("give back"))
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	if err := f.Queue.Release(ctxFor(t), m); err != nil {
		t.Fatalf("release: %v", err)
	}
	again := s.receiveOne(t, f.Queue, 0)
	if again.ID != m.ID || again.ReceiveCount != 2 {
		t.Fatalf("after release: %s receive count %d", again.ID, again.ReceiveCount)
	}
}

// receiveWithVisibility: a receive's own visibility replaces the queue's,
// shorter or longer, for that delivery only; one outside
// 0..MaxVisibility is refused.
func (s *suite) receiveWithVisibility(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 4 * s.vis()})
	ctx := ctxFor(t)
	send(t, f.Queue, body("look"))
	var m *queue.Message
	deadline := time.Now().Add(5*time.Second + s.h.Slack)
	for m == nil {
		ms, err := f.Queue.ReceiveWith(ctx, queue.ReceiveOptions{Max: 1, Wait: s.pollWait(), Visibility: s.vis()})
		if err != nil {
			t.Fatalf("receive with visibility %v: %v", s.vis(), err)
		}
		if len(ms) == 1 {
			m = ms[0]
		} else if s.h.FakeTime || time.Now().After(deadline) {
			t.Fatal("the message was not received")
		}
	}
	if string(m.Body) != "look" || m.ReceiveCount != 1 {
		t.Fatalf("received %q count %d", m.Body, m.ReceiveCount)
	}
	s.expectEmpty(t, f.Queue, "within the receive's visibility")
	// Back after the receive's visibility, long before the queue's.
	f.Advance(s.vis())
	again := s.receiveOne(t, f.Queue, s.vis())
	if again.ID != m.ID || again.ReceiveCount != 2 {
		t.Fatalf("after the receive's visibility: %s count %d, want %s count 2", again.ID, again.ReceiveCount, m.ID)
	}
	// This delivery has the queue's timeout again: invisible past the
	// receive's visibility. Released, then received for longer than the
	// queue's timeout.
	f.Advance(s.vis() + s.h.Slack)
	s.expectEmpty(t, f.Queue, "a plain receive has the queue's visibility timeout")
	if err := f.Queue.Release(ctx, again); err != nil {
		t.Fatal(err)
	}
	var long []*queue.Message
	deadline = time.Now().Add(5*time.Second + s.h.Slack)
	for len(long) == 0 {
		ms, err := f.Queue.ReceiveWith(ctx, queue.ReceiveOptions{Max: queue.MaxBatch, Wait: s.pollWait(), Visibility: 8 * s.vis()})
		if err != nil {
			t.Fatalf("receive with visibility %v: %v", 8*s.vis(), err)
		}
		long = ms
		if len(ms) == 0 && (s.h.FakeTime || time.Now().After(deadline)) {
			t.Fatal("the released message was not received")
		}
	}
	f.Advance(4*s.vis() + s.h.Slack)
	s.expectEmpty(t, f.Queue, "past the queue's timeout, within the receive's")
	for _, v := range []time.Duration{-time.Second, queue.MaxVisibility + time.Second} {
		if _, err := f.Queue.ReceiveWith(ctx, queue.ReceiveOptions{Max: 1, Visibility: v}); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("receive with visibility %v: %v, want queue.ErrInvalid", v, err)
		}
	}
}

// purge: Purge deletes visible, in-flight and delayed messages.
func (s *suite) purge(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 10 * s.vis()})
	ctx := ctxFor(t)
	send(t, f.Queue, body("a"), body("b"), queue.SendEntry{Body: []byte("c"), Delay: time.Minute})
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	if err := f.Queue.Purge(ctx); err != nil {
		t.Fatalf("purge: %v", err)
	}
	// SQS takes up to a minute to finish a purge.
	slack := s.h.Slack
	if s.h.ApproximateDepth {
		slack = max(slack, time.Minute)
	}
	deadline := time.Now().Add(slack)
	for {
		d, err := f.Queue.Depth(ctx)
		if err != nil {
			t.Fatalf("depth: %v", err)
		}
		if d.Total() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("depth %+v after purge, want none", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := f.Queue.Release(ctx, m); err != nil {
		t.Errorf("release of a purged message: %v, want success", err)
	}
	s.expectEmpty(t, f.Queue, "after the purge")
}

func (s *suite) delay(t *testing.T) {
	f := s.h.New(t, Options{})
	d := 2 * s.vis()
	send(t, f.Queue, queue.SendEntry{Body: []byte("later"), Delay: d}, body("now"))
	now := s.receiveOne(t, f.Queue, 5*time.Second)
	if string(now.Body) != "now" {
		t.Fatalf("received %q first, want the undelayed message", now.Body)
	}
	s.expectEmpty(t, f.Queue, "before the delay passed")
	// Deleted, so that only the delayed message can be received next: were
	// "now" to come back after its visibility timeout, the order in which a
	// standard queue hands out two visible messages is not defined.
	if err := f.Queue.Delete(ctxFor(t), now); err != nil {
		t.Fatalf("delete: %v", err)
	}
	f.Advance(d)
	later := s.receiveOne(t, f.Queue, s.vis())
	if string(later.Body) != "later" || later.ReceiveCount != 1 {
		t.Fatalf("after the delay: %q receive count %d", later.Body, later.ReceiveCount)
	}
}

func (s *suite) redrive(t *testing.T) {
	f := s.h.New(t, Options{MaxReceiveCount: 2})
	if f.DeadLetter == nil {
		t.Fatal("harness made no dead-letter queue for MaxReceiveCount 2")
	}
	send(t, f.Queue, queue.SendEntry{Body: []byte("poison"), Attributes: map[string]string{"kind": "bad"}})
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	f.Advance(s.vis())
	if m2 := s.receiveOne(t, f.Queue, s.vis()); m2.ReceiveCount != 2 {
		t.Fatalf("second receive count %d", m2.ReceiveCount)
	}
	f.Advance(s.vis())
	// The receive that would make the count 3 moves the message instead.
	if ms := s.receiveN(t, f.Queue, 1, s.vis()); len(ms) != 0 {
		t.Fatalf("third receive delivered %q (count %d); want it dead-lettered", ms[0].Body, ms[0].ReceiveCount)
	}
	dl := s.receiveOne(t, f.DeadLetter, 5*time.Second)
	if string(dl.Body) != "poison" || dl.Attributes["kind"] != "bad" || dl.ID != m.ID {
		t.Fatalf("dead-lettered %s %q %v, want %s", dl.ID, dl.Body, dl.Attributes, m.ID)
	}
}

func (s *suite) expectDepth(t *testing.T, q queue.Queue, want queue.Depth) {
	t.Helper()
	deadline := time.Now().Add(s.h.Slack)
	for {
		got, err := q.Depth(ctxFor(t))
		if err != nil {
			t.Fatalf("depth: %v", err)
		}
		if got == want {
			return
		}
		if !s.h.ApproximateDepth || time.Now().After(deadline) {
			t.Fatalf("depth %+v, want %+v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) depth(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 10 * s.vis()})
	s.expectDepth(t, f.Queue, queue.Depth{})
	send(t, f.Queue, body("a"), body("b"), body("c"),
		queue.SendEntry{Body: []byte("d"), Delay: time.Minute},
		queue.SendEntry{Body: []byte("e"), Delay: time.Minute})
	s.expectDepth(t, f.Queue, queue.Depth{Visible: 3, Delayed: 2})
	m := s.receiveOne(t, f.Queue, 5*time.Second)
	s.expectDepth(t, f.Queue, queue.Depth{Visible: 2, InFlight: 1, Delayed: 2})
	if err := f.Queue.Release(ctxFor(t), m); err != nil {
		t.Fatal(err)
	}
	s.expectDepth(t, f.Queue, queue.Depth{Visible: 3, Delayed: 2})
	if d := (queue.Depth{Visible: 3, InFlight: 1, Delayed: 2}); d.Total() != 6 {
		t.Fatalf("Total %d", d.Total())
	}
}

func (s *suite) longPollArrival(t *testing.T) {
	f := s.h.New(t, Options{})
	ctx := ctxFor(t)
	type result struct {
		ms  []*queue.Message
		err error
	}
	got := make(chan result, 1)
	start := time.Now()
	go func() {
		ms, err := f.Queue.Receive(ctx, queue.MaxBatch, queue.MaxWait)
		got <- result{ms, err}
	}()
	// Whether the receiver is already waiting or not, it must see the
	// message long before its wait ends (with fake time it never ends).
	send(t, f.Queue, body("wake up"))
	select {
	case r := <-got:
		if r.err != nil || len(r.ms) != 1 || string(r.ms[0].Body) != "wake up" {
			t.Fatalf("long poll: %v %d messages", r.err, len(r.ms))
		}
		if el := time.Since(start); el > queue.MaxWait/2 {
			t.Fatalf("long poll returned after %v, not when the message arrived", el)
		}
	case <-time.After(queue.MaxWait / 2):
		t.Fatal("long poll did not return when a message arrived")
	}
}

func (s *suite) receiveCancelled(t *testing.T) {
	f := s.h.New(t, Options{})
	ctx, cancel := context.WithCancel(ctxFor(t))
	cancel()
	if _, err := f.Queue.Receive(ctx, 1, queue.MaxWait); !errors.Is(err, context.Canceled) {
		t.Fatalf("receive with a cancelled ctx: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(ctxFor(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.Queue.Receive(ctx, queue.MaxBatch, queue.MaxWait)
		done <- err
	}()
	time.AfterFunc(200*time.Millisecond, cancel)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("receive cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(queue.MaxWait / 2):
		t.Fatal("receive did not return when ctx was cancelled")
	}
}

func (s *suite) deleteGone(t *testing.T) {
	f := s.h.New(t, Options{})
	ctx := ctxFor(t)
	send(t, f.Queue, body("once"), body("stale"))
	ms := s.receiveN(t, f.Queue, 2, 5*time.Second)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	once, stale := ms[0], ms[1]
	if string(once.Body) != "once" {
		once, stale = stale, once
	}
	if err := f.Queue.Delete(ctx, once); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := f.Queue.Delete(ctx, once); err != nil {
		t.Errorf("deleting an already deleted message: %v, want success", err)
	}
	if err := f.Queue.Release(ctx, once); err != nil {
		t.Errorf("releasing a deleted message: %v, want success", err)
	}
	err := f.Queue.ChangeVisibility(ctx, queue.VisibilityChange{Message: once, Timeout: s.vis()})
	if !errors.Is(err, queue.ErrReceiptInvalid) {
		t.Errorf("changing the visibility of a deleted message: %v, want queue.ErrReceiptInvalid", err)
	}
	// An expired receipt handle: the message came back under a new one.
	f.Advance(s.vis())
	again := s.receiveOne(t, f.Queue, s.vis())
	if again.ID != stale.ID {
		t.Fatalf("redelivered %s, want %s", again.ID, stale.ID)
	}
	if err := f.Queue.Delete(ctx, stale); err != nil {
		t.Errorf("delete with an expired receipt handle: %v, want success", err)
	}
	if err := f.Queue.Delete(ctx, again); err != nil {
		t.Errorf("delete with the current receipt handle: %v", err)
	}
	s.expectDepth(t, f.Queue, queue.Depth{})
}

// staleInBatches: batch calls mixing live receipt handles with one whose
// message was deleted. ChangeVisibility fails that entry alone, with
// queue.ErrReceiptInvalid, and still extends the others; Release and Delete
// succeed for every entry.
func (s *suite) staleInBatches(t *testing.T) {
	f := s.h.New(t, Options{VisibilityTimeout: 10 * s.vis()})
	ctx := ctxFor(t)
	send(t, f.Queue, body("a"), body("b"), body("c"))
	ms := s.receiveN(t, f.Queue, 3, 5*time.Second)
	if len(ms) != 3 {
		t.Fatalf("received %d, want 3", len(ms))
	}
	gone := ms[1]
	if err := f.Queue.Delete(ctx, gone); err != nil {
		t.Fatalf("delete: %v", err)
	}
	err := f.Queue.ChangeVisibility(ctx,
		queue.VisibilityChange{Message: ms[0], Timeout: 20 * s.vis()},
		queue.VisibilityChange{Message: gone, Timeout: 20 * s.vis()},
		queue.VisibilityChange{Message: ms[2], Timeout: 20 * s.vis()})
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 1 || !errors.Is(be.Failed[1], queue.ErrReceiptInvalid) {
		t.Fatalf("change visibility of [live, deleted, live]: %v, want queue.ErrReceiptInvalid for entry 1 only", err)
	}
	if err := f.Queue.Release(ctx, gone, ms[0]); err != nil {
		t.Fatalf("release of [deleted, live]: %v, want success", err)
	}
	again := s.receiveOne(t, f.Queue, 5*time.Second)
	if again.ID != ms[0].ID {
		t.Fatalf("after release: received %s %q, want the released %s", again.ID, again.Body, ms[0].ID)
	}
	if err := f.Queue.Delete(ctx, gone, again, ms[2]); err != nil {
		t.Fatalf("delete of [deleted, live, live]: %v, want success", err)
	}
	s.expectDepth(t, f.Queue, queue.Depth{})
}

func (s *suite) visibilityTimeout(t *testing.T) {
	want := 3 * s.vis()
	f := s.h.New(t, Options{VisibilityTimeout: want})
	for range 2 { // the second answer may come from a cache
		got, err := f.Queue.VisibilityTimeout(ctxFor(t))
		if err != nil || got != want {
			t.Fatalf("VisibilityTimeout = %v, %v; want %v", got, err, want)
		}
	}
}

func (s *suite) concurrent(t *testing.T) {
	// Long visibility: a slow receiver must not cause redeliveries that
	// would make "received at least once" trivially true.
	f := s.h.New(t, Options{VisibilityTimeout: 30 * s.vis()})
	ctx := ctxFor(t)
	const senders, perSender, receivers = 4, 60, 4
	total := senders * perSender
	var wg sync.WaitGroup
	for sd := range senders {
		wg.Go(func() {
			for i := 0; i < perSender; i += 15 {
				var es []queue.SendEntry
				for j := i; j < min(i+15, perSender); j++ {
					es = append(es, body(fmt.Sprintf("s%d-%03d", sd, j)))
				}
				if err := f.Queue.Send(ctx, es...); err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	var rg sync.WaitGroup
	for range receivers {
		rg.Go(func() {
			for {
				mu.Lock()
				done := len(seen) == total
				mu.Unlock()
				if done || time.Now().After(deadline) {
					return
				}
				ms, err := f.Queue.Receive(ctx, queue.MaxBatch, s.pollWait())
				if err != nil {
					t.Errorf("receive: %v", err)
					return
				}
				mu.Lock()
				for _, m := range ms {
					seen[string(m.Body)]++
				}
				mu.Unlock()
				if err := f.Queue.Delete(ctx, ms...); err != nil {
					t.Errorf("delete: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	rg.Wait()
	if len(seen) != total {
		t.Fatalf("received %d distinct messages, want %d", len(seen), total)
	}
	for sd := range senders {
		for j := range perSender {
			if seen[fmt.Sprintf("s%d-%03d", sd, j)] == 0 {
				t.Errorf("s%d-%03d never received", sd, j)
			}
		}
	}
	for b := range seen {
		var sd, j int
		if _, err := fmt.Sscanf(b, "s%d-%03d", &sd, &j); err != nil || sd >= senders || j >= perSender {
			t.Errorf("received a message nobody sent: %q", b)
		}
	}
	s.expectDepth(t, f.Queue, queue.Depth{})
}
