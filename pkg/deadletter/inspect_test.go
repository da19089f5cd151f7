package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
)

const prefix = "mill-"

// env is one test's dead-letter queue and work queues, behind one claim
// check, and the inspector over them.
type env struct {
	t       *testing.T
	prefix  string
	in      *deadletter.Inspector
	dlq     queue.Queue            // behind the claim check
	raw     queue.Queue            // the dead-letter queue itself
	work    map[string]queue.Queue // by key, behind the claim check
	blobs   *memblob.Store
	visible func() int // visible messages on the dead-letter queue, once settled
}

// backends are the queues the tests run on.
var backends = []struct {
	name string
	new  func(t *testing.T) *env
}{
	{"memqueue", newMemEnv},
	{"sqs", newSQSEnv},
}

func runAll(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.new(t)) })
	}
}

func logger(t *testing.T) *slog.Logger {
	return slogtest.New(t, slog.LevelWarn)
}

// finish builds the claim check and the inspector over raw queues opened
// by name.
func finish(t *testing.T, pfx string, open func(name string) queue.Queue, wait time.Duration) *env {
	e := &env{t: t, prefix: pfx, blobs: memblob.New(nil), work: map[string]queue.Queue{}}
	wrap := func(q queue.Queue) queue.Queue {
		return claimcheck.New(q, e.blobs, claimcheck.Config{KeyPrefix: "claims/"})
	}
	e.raw = open(queue.Name(pfx, queue.KeyDeadLetter))
	e.dlq = wrap(e.raw)
	byName := map[string]queue.Queue{}
	for _, k := range queue.AllKeys {
		if k != queue.KeyDeadLetter {
			e.work[k] = wrap(open(queue.Name(pfx, k)))
			byName[queue.Name(pfx, k)] = e.work[k]
		}
	}
	var err error
	e.in, err = deadletter.New(deadletter.Config{Queue: e.dlq, Prefix: pfx, Hold: 10 * time.Second, Wait: wait, Logger: logger(t),
		Open: func(_ context.Context, name string) (queue.Queue, error) {
			if q, ok := byName[name]; ok {
				return q, nil
			}
			return nil, fmt.Errorf("open %s: %w", name, queue.ErrNotFound)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newMemEnv(t *testing.T) *env {
	e := finish(t, prefix, func(name string) queue.Queue { return memqueue.New(name, memqueue.Config{}) }, -1)
	e.visible = func() int {
		d, _ := e.raw.Depth(context.Background())
		return int(d.Visible)
	}
	return e
}

func newSQSEnv(t *testing.T) *env {
	cfg := testenv.AWS(t)
	api := cfg.SQS()
	pfx := testenv.Prefix(t)
	testenv.CleanupQueues(t, api, pfx)
	ctx := context.Background()
	e := finish(t, pfx, func(name string) queue.Queue {
		if _, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, api, name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}, 0)
	e.visible = func() int {
		// SQS's counts are approximate: the last of a few reads a
		// moment apart.
		var d queue.Depth
		for range 5 {
			d, _ = e.raw.Depth(ctx)
			time.Sleep(200 * time.Millisecond)
		}
		return int(d.Visible)
	}
	return e
}

var when = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func letter(t *testing.T, typ task.Type, source, errText string, attempts int, id string) *deadletter.Letter {
	t.Helper()
	body, err := task.Encode(task.New(typ, map[string]string{"id": id}), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := task.Decode(body)
	tk.Attempts = attempts
	body, _ = task.Encode(tk, task.FormatJSON)
	return &deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: errText, TaskType: typ, SourceQueue: source,
		Attempts: attempts, Worker: "w1", Time: when, MessageID: "src-" + id}
}

func (e *env) put(ls ...*deadletter.Letter) {
	e.t.Helper()
	var es []queue.SendEntry
	for _, l := range ls {
		en, err := deadletter.Encode(l)
		if err != nil {
			e.t.Fatal(err)
		}
		es = append(es, en)
	}
	if err := e.dlq.Send(context.Background(), es...); err != nil {
		e.t.Fatal(err)
	}
}

// seed puts five dead letters: three DUP from dup-high, two BIT from bit.
func (e *env) seed() {
	e.t.Helper()
	for i := range 3 {
		e.put(letter(e.t, task.TypeDup, queue.Name(e.prefix, queue.KeyDupHigh), "dup: copy: AccessDenied", 3, fmt.Sprintf("dup-%d", i)))
	}
	for i := range 2 {
		e.put(letter(e.t, task.TypeBit, queue.Name(e.prefix, queue.KeyBit), "bit: context deadline exceeded (TIMEOUT)", 3, fmt.Sprintf("bit-%d", i)))
	}
}

func (e *env) receiveAll(key string) []*queue.Message {
	e.t.Helper()
	var out []*queue.Message
	for {
		ms, err := e.work[key].Receive(context.Background(), queue.MaxBatch, time.Second)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ms) == 0 {
			return out
		}
		out = append(out, ms...)
	}
}

// TestListAndFind: filters by type, error text, source (key or name) and
// ID; a limit; what was looked at is visible again afterwards.
func TestListAndFind(t *testing.T) {
	runAll(t, func(t *testing.T, e *env) {
		e.seed()
		ctx := context.Background()
		for _, c := range []struct {
			f    deadletter.Filter
			want int
		}{
			{deadletter.Filter{}, 5},
			{deadletter.Filter{Type: "dup"}, 3},
			{deadletter.Filter{Error: "timeout"}, 2},
			{deadletter.Filter{Source: queue.KeyBit}, 2},
			{deadletter.Filter{Source: queue.Name(e.prefix, queue.KeyDupHigh)}, 3},
			{deadletter.Filter{Source: queue.KeyDupLow}, 0},
			{deadletter.Filter{ID: "src-bit-1"}, 1},
			{deadletter.Filter{Type: "BIT", Error: "AccessDenied"}, 0},
		} {
			l, err := e.in.List(ctx, c.f, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Entries) != c.want {
				t.Errorf("%+v: %d entries, want %d", c.f, len(l.Entries), c.want)
			}
			for _, en := range l.Entries {
				if !e.in.Match(c.f, en) || en.Foreign || en.Letter.Time != when {
					t.Errorf("%+v: entry %+v", c.f, en.Letter)
				}
			}
		}
		l, err := e.in.List(ctx, deadletter.Filter{}, 2)
		if err != nil || len(l.Entries) != 2 || l.Complete {
			t.Fatalf("limit 2: %d entries, complete %v, %v", len(l.Entries), l.Complete, err)
		}
		en, err := e.in.Find(ctx, "src-dup-2")
		if err != nil || en.Letter.MessageID != "src-dup-2" || en.Letter.TaskType != task.TypeDup {
			t.Fatalf("find by source message ID: %+v, %v", en, err)
		}
		if again, err := e.in.Find(ctx, en.Message.ID); err != nil || again.Letter.MessageID != "src-dup-2" {
			t.Fatalf("find by message ID: %v", err)
		}
		if _, err := e.in.Find(ctx, "nope"); !errors.Is(err, deadletter.ErrNotFound) || !strings.Contains(err.Error(), "no message nope") {
			t.Fatalf("find of a missing ID: %v", err)
		}
		if n := e.visible(); n != 5 {
			t.Fatalf("%d messages visible after the scans, want 5", n)
		}
		p := en.Provenance()
		if len(p) == 0 || p[0].Value != en.Message.ID || !strings.Contains(fmt.Sprint(p), "source message id src-dup-2") {
			t.Errorf("provenance %v", p)
		}
		if f, desc, err := deadletter.DescribeTask(en.Letter.Body); err != nil || f != task.FormatJSON || !strings.Contains(desc, "id=dup-2") {
			t.Errorf("DescribeTask: %v %q %v", f, desc, err)
		}
	})
}

// TestRedrive: a dry run changes nothing; a redrive sends each original
// body back to its source queue with attempts reset (or kept), and
// deletes it here; a message in no dead-letter form is skipped unless To
// names a queue; one naming a queue that is not one of Mill's work queues
// is refused and stays.
func TestRedrive(t *testing.T) {
	runAll(t, func(t *testing.T, e *env) {
		e.seed()
		ctx := context.Background()
		foreign := letter(t, task.TypeNoop, "other-system-queue", "x", 1, "foreign")
		e.put(foreign)
		plain, _ := task.Encode(task.New(task.TypeNoop, map[string]string{"id": "plain"}), task.FormatProperties)
		if err := e.dlq.Send(ctx, queue.SendEntry{Body: plain}); err != nil {
			t.Fatal(err)
		}

		var would []string
		st, err := e.in.Redrive(ctx, deadletter.Redrive{DryRun: true, Filter: deadletter.Filter{Type: "DUP"},
			Each: func(en *deadletter.Entry, target string) { would = append(would, en.Letter.MessageID+"→"+target) }})
		if err != nil || st.Redriven != 3 || st.NotMatching != 4 || len(would) != 3 || !strings.HasSuffix(would[0], "→"+queue.Name(e.prefix, queue.KeyDupHigh)) {
			t.Fatalf("dry run: %+v %v %v", st, would, err)
		}
		if n := e.visible(); n != 7 {
			t.Fatalf("%d visible after the dry run, want 7", n)
		}

		st, err = e.in.Redrive(ctx, deadletter.Redrive{Filter: deadletter.Filter{Type: "DUP"}})
		if err != nil || st.Redriven != 3 || st.Failed != 0 {
			t.Fatalf("redrive DUP: %+v, %v", st, err)
		}
		for _, m := range e.receiveAll(queue.KeyDupHigh) {
			tk, err := task.Decode(m.Body)
			if err != nil || tk.Type != task.TypeDup || tk.Attempts != 0 {
				t.Errorf("redriven task %q: %v", m.Body, err)
			}
		}
		st, err = e.in.Redrive(ctx, deadletter.Redrive{KeepAttempts: true, Filter: deadletter.Filter{Source: queue.KeyBit}})
		if err != nil || st.Redriven != 2 {
			t.Fatalf("redrive bit: %+v, %v", st, err)
		}
		if ms := e.receiveAll(queue.KeyBit); len(ms) != 2 || !strings.Contains(string(ms[0].Body), `"attempts":3`) {
			t.Fatalf("kept attempts: %d messages", len(ms))
		}

		// Left: the foreign source and the plain message.
		st, err = e.in.Redrive(ctx, deadletter.Redrive{})
		if st.Redriven != 0 || st.Failed != 1 || st.Skipped != 1 || err == nil || !strings.Contains(err.Error(), "not one of Mill's work queues") {
			t.Fatalf("redrive of what is left: %+v, %v", st, err)
		}
		if n := e.visible(); n != 2 {
			t.Fatalf("%d visible after the refused redrive, want 2", n)
		}
		st, err = e.in.Redrive(ctx, deadletter.Redrive{To: queue.KeyDupLow})
		if err != nil || st.Redriven != 2 {
			t.Fatalf("redrive --to dup-low: %+v, %v", st, err)
		}
		if ms := e.receiveAll(queue.KeyDupLow); len(ms) != 2 {
			t.Fatalf("dup-low holds %d, want 2", len(ms))
		}
		if n := e.visible(); n != 0 {
			t.Fatalf("%d left on the dead-letter queue", n)
		}
	})
}

// TestPurge: a filtered purge asks first (no deletes nothing), then
// deletes only the matches; the whole queue is purged at once.
func TestPurge(t *testing.T) {
	runAll(t, func(t *testing.T, e *env) {
		e.seed()
		ctx := context.Background()
		asked := 0
		res, err := e.in.Purge(ctx, deadletter.Purge{Filter: deadletter.Filter{Type: "BIT"}, Confirm: func(n, looked int) bool {
			asked = n
			return false
		}})
		if err != nil || !res.Cancelled || asked != 2 || res.Summary("q") != "cancelled, nothing deleted" {
			t.Fatalf("declined purge: %+v asked %d, %v", res, asked, err)
		}
		res, err = e.in.Purge(ctx, deadletter.Purge{Filter: deadletter.Filter{Type: "BIT"}, Confirm: func(int, int) bool { return true }})
		if err != nil || res.Deleted != 2 || res.Summary("q") != "2 deleted, 0 failed" {
			t.Fatalf("purge BIT: %+v, %v", res, err)
		}
		if n := e.visible(); n != 3 {
			t.Fatalf("%d visible after purging BIT, want 3", n)
		}
		res, err = e.in.Purge(ctx, deadletter.Purge{Confirm: func(n, looked int) bool { return looked == -1 && n == 3 }})
		if err != nil || !res.All || res.Deleted != 3 {
			t.Fatalf("purge all: %+v, %v", res, err)
		}
		if n := e.visible(); n != 0 {
			t.Fatalf("%d visible after purging all", n)
		}
	})
}

// TestClaimCheckConfinement: a claim-checked dead letter is shown and
// redriven whole; one whose reference names a key the claim check does
// not own (another object of the bucket) is refused by redrive and, when
// purged, the message goes but the object stays; one whose blob is gone
// is not redriven and stays.
func TestClaimCheckConfinement(t *testing.T) {
	runAll(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		big := letter(t, task.TypeNoop, queue.Name(e.prefix, queue.KeyDupLow), "noop: injected", 3, "big")
		tk, _ := task.Decode(big.Body)
		tk.Props["pad"] = strings.Repeat("p", 300<<10)
		big.Body, _ = task.Encode(tk, task.FormatJSON)
		e.put(big)
		const stateKey = "state/bitproducer.json"
		if err := e.blobs.Put(ctx, stateKey, []byte("state")); err != nil {
			t.Fatal(err)
		}
		forged := queue.SendEntry{Body: []byte(`{"millClaimCheck":{"key":"` + stateKey + `","size":5,"sha256":"00"}}`),
			Attributes: map[string]string{claimcheck.AttrRef: stateKey}}
		if err := e.raw.Send(ctx, forged); err != nil {
			t.Fatal(err)
		}

		en, err := e.in.Find(ctx, "src-big")
		if err != nil || en.Unresolved != nil || len(en.Letter.Body) != len(big.Body) {
			t.Fatalf("the claim-checked dead letter: %v", err)
		}
		st, err := e.in.Redrive(ctx, deadletter.Redrive{To: queue.KeyDupLow})
		if st.Redriven != 1 || st.Failed != 1 || err == nil || !strings.Contains(err.Error(), "claimcheck: key outside claims prefix") {
			t.Fatalf("redrive: %+v, %v", st, err)
		}
		ms := e.receiveAll(queue.KeyDupLow)
		if len(ms) != 1 || len(ms[0].Body) != len(big.Body) {
			t.Fatalf("dup-low: %d messages", len(ms))
		}
		res, err := e.in.Purge(ctx, deadletter.Purge{Filter: deadletter.Filter{Error: "not a dead-letter"}})
		if err != nil || res.Deleted != 1 {
			t.Fatalf("purge of the forged reference: %+v, %v", res, err)
		}
		if b, err := e.blobs.Get(ctx, stateKey); err != nil || string(b) != "state" {
			t.Fatalf("the foreign object after redrive and purge: %q, %v", b, err)
		}
		// A blob gone: not redriven, kept. (Deleting a message leaves its
		// blob to the claims prefix's expiry, so the blobs of the letter
		// redriven above are still there: the one to delete is the new one.)
		before, _ := e.blobs.List(ctx, "")
		e.put(big)
		after, _ := e.blobs.List(ctx, "")
		var key string
		for _, k := range after {
			if strings.HasPrefix(k, "claims/") && !slices.Contains(before, k) {
				key = k
			}
		}
		if err := e.blobs.Delete(ctx, key); err != nil || key == "" {
			t.Fatalf("delete blob %q: %v", key, err)
		}
		st, err = e.in.Redrive(ctx, deadletter.Redrive{})
		if st.Failed != 1 || !errors.Is(err, claimcheck.ErrBlobNotFound) {
			t.Fatalf("redrive of a dead letter whose blob is gone: %+v, %v", st, err)
		}
		if n := e.visible(); n != 1 {
			t.Fatalf("%d visible, want the dead letter kept", n)
		}
	})
}

// TestScanHoldsWhileItRuns: a scan longer than the hold keeps what it
// looked at invisible (it extends the hold), and releases it at the end.
func TestScanHoldsWhileItRuns(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	raw := memqueue.New("dlq", memqueue.Config{Clock: fc})
	in, err := deadletter.New(deadletter.Config{Queue: raw, Hold: 10 * time.Second, Wait: -1, Clock: fc, Logger: logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var es []queue.SendEntry
	for i := range 25 {
		en, _ := deadletter.Encode(letter(t, task.TypeNoop, "q", "e", 1, fmt.Sprint(i)))
		es = append(es, en)
	}
	if err := raw.Send(ctx, es...); err != nil {
		t.Fatal(err)
	}
	s := in.Scan()
	seen := map[string]bool{}
	for {
		batch, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if batch == nil {
			break
		}
		for _, en := range batch {
			if seen[en.Message.ID] {
				t.Fatalf("%s seen twice", en.Message.ID)
			}
			seen[en.Message.ID] = true
		}
		fc.Advance(6 * time.Second) // past half the hold each time: 18 s in all
	}
	if len(seen) != 25 || s.Looked() != 25 || !s.Done() {
		t.Fatalf("scan saw %d (looked %d)", len(seen), s.Looked())
	}
	if d, _ := raw.Depth(ctx); d.InFlight != 25 {
		t.Fatalf("during the scan: %+v, want all 25 held", d)
	}
	s.Close(ctx)
	if d, _ := raw.Depth(ctx); d.Visible != 25 {
		t.Fatalf("after Close: %+v, want all 25 visible", d)
	}
}

// TestRedriveRate: 20 messages at 10 a second take 2 s of the clock, the
// held messages kept invisible meanwhile.
func TestRedriveRate(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	dlq := memqueue.New("dlq", memqueue.Config{Clock: fc})
	work := memqueue.New(prefix+queue.KeyDupLow, memqueue.Config{Clock: fc})
	in, err := deadletter.New(deadletter.Config{Queue: dlq, Prefix: prefix, Hold: 2 * time.Second, Wait: -1, Clock: fc, Logger: logger(t),
		Open: func(context.Context, string) (queue.Queue, error) { return work, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var es []queue.SendEntry
	for i := range 20 {
		en, _ := deadletter.Encode(letter(t, task.TypeNoop, prefix+queue.KeyDupLow, "e", 1, fmt.Sprint(i)))
		es = append(es, en)
	}
	if err := dlq.Send(ctx, es...); err != nil {
		t.Fatal(err)
	}
	start := fc.Now()
	var (
		st   deadletter.RedriveStats
		rerr error
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	bctx, stopBlocking := context.WithCancel(ctx)
	wg.Go(func() {
		defer close(done)
		defer stopBlocking()
		st, rerr = in.Redrive(ctx, deadletter.Redrive{Rate: 10})
	})
	for {
		select {
		case <-done:
			wg.Wait()
			if rerr != nil || st.Redriven != 20 {
				t.Fatalf("redrive: %+v, %v", st, rerr)
			}
			if took := fc.Now().Sub(start); took < 2*time.Second || took > 3*time.Second {
				t.Fatalf("20 messages at 10/s took %v of the clock", took)
			}
			if work.Len() != 20 || dlq.Len() != 0 {
				t.Fatalf("work %d, dead-letter %d", work.Len(), dlq.Len())
			}
			return
		default:
		}
		if err := fc.BlockUntil(bctx, 1); err != nil {
			<-done // the redrive ended (or the test timed out: its error says)
			continue
		}
		fc.Advance(100 * time.Millisecond)
	}
}
