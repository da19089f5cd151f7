package workman

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/task"
)

// flakyBlobs fails every Get while down is set, as S3 does in an outage.
type flakyBlobs struct {
	*memblob.Store
	down atomic.Bool
}

func (b *flakyBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	if b.down.Load() {
		return nil, errors.New("s3: service unavailable")
	}
	return b.Store.Get(ctx, key)
}

// TestClaimCheckedTasks runs Workman over claim-checked queues, as the
// binaries do: a task too big for SQS is processed with its whole body,
// retried (a new blob for the re-send) and its blobs kept for the claims
// expiry (no message delete deletes one); a reference whose blob is gone is dead-lettered with the
// cause; one whose blob cannot be read for now is left for redelivery and
// completes once the blob store is back.
func TestClaimCheckedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blobs := &flakyBlobs{Store: memblob.New(nil)}
		pad := strings.Repeat("p", 300<<10)
		var failedOnce atomic.Bool
		var sawPad atomic.Int64
		rec := &recorder{fn: func(ctx context.Context, tk *task.Task) error {
			if len(tk.Get("pad")) == len(pad) {
				sawPad.Add(1)
			}
			if tk.Get("id") == "big-retry" && !failedOnce.Swap(true) {
				return errors.New("transient")
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec, vt: 30 * time.Second, cfg: func(c *Config) {
			c.Queues = []queue.Queue{claimcheck.New(c.Queues[0], blobs, claimcheck.Config{})}
			c.DeadLetter = claimcheck.New(c.DeadLetter, blobs, claimcheck.Config{})
		}})
		rec.clk = h.clk
		ctx := context.Background()
		in := claimcheck.New(h.queues[0], blobs, claimcheck.Config{})
		send := func(id string) {
			t.Helper()
			b, err := task.Encode(task.New(task.TypeNoop, map[string]string{"id": id, "pad": pad}), task.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Send(ctx, queue.SendEntry{Body: b}); err != nil {
				t.Fatal(err)
			}
		}
		send("big")
		send("big-retry")
		send("big-lost")
		// Lose the blob of the third message: receive it raw and delete its blob.
		ms, err := h.queues[0].Receive(ctx, 10, 0)
		if err != nil || len(ms) != 3 {
			t.Fatalf("receive raw: %v, %d", err, len(ms))
		}
		if err := blobs.Delete(ctx, ms[2].Attributes[claimcheck.AttrRef]); err != nil {
			t.Fatal(err)
		}
		if err := h.queues[0].Release(ctx, ms...); err != nil {
			t.Fatal(err)
		}
		blobs.down.Store(true)
		send("big-later") // sent while reads fail; Put still works
		h.start()

		// While reads fail nothing runs and nothing is dead-lettered: every
		// message waits out its visibility timeout.
		h.advance(10 * time.Second)
		if n := len(rec.get()); n != 0 || h.dlq.Len() != 0 {
			t.Fatalf("with the blob store down: %d tasks ran, %d dead letters; want none", n, h.dlq.Len())
		}
		blobs.down.Store(false)
		if !h.advanceUntil(5*time.Minute, func() bool { return sawPad.Load() == 4 && h.dlq.Len() == 1 }) {
			t.Fatalf("after the blob store came back: %d runs with the whole body (want 4: big, big-retry twice, big-later), %d dead letters (want 1)", sawPad.Load(), h.dlq.Len())
		}
		dls := readDLQ(t, h.dlq)
		if len(dls) != 1 || dls[0].Reason != ReasonUndecodable || !strings.Contains(dls[0].Error, "blob not found") ||
			!strings.Contains(string(dls[0].Body), "millClaimCheck") {
			t.Fatalf("dead letter of the lost blob: %+v", dls[0])
		}
		h.advance(2 * time.Second) // the batched deletes
		if n := h.queues[0].Len(); n != 0 {
			t.Errorf("%d messages left on the queue", n)
		}
		// big, big-retry and its re-send, big-later (big-lost's was deleted).
		if n := blobs.Len(); n != 4 {
			t.Errorf("%d blobs left, want 4: a blob is never deleted with its message", n)
		}
	})
}

// TestForgedClaimReferences: references the claim check refuses — another
// object of the claims bucket, an empty key — are dead-lettered at once as
// permanent, the reason naming the rule broken, and the object they named
// is neither run nor deleted. Before, the foreign object was read and
// deleted, and an empty key was retried for ever.
func TestForgedClaimReferences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blobs := memblob.New(nil)
		ctx := context.Background()
		state := []byte(`{"producer":"dup"}`)
		if err := blobs.Put(ctx, "state/dupproducer.json", state); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		h := newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) {
			c.Queues = []queue.Queue{claimcheck.New(c.Queues[0], blobs, claimcheck.Config{KeyPrefix: "claims/"})}
		}})
		rec.clk = h.clk
		rules := map[string]string{"state/dupproducer.json": "claimcheck: key outside claims prefix", "": "claimcheck: empty key"}
		for key := range rules {
			body := `{"millClaimCheck":{"key":"` + key + `","size":18,"sha256":"x"}}`
			if err := h.queues[0].Send(ctx, queue.SendEntry{Body: []byte(body), Attributes: map[string]string{claimcheck.AttrRef: key}}); err != nil {
				t.Fatal(err)
			}
		}
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return h.dlq.Len() == 2 }) {
			t.Fatalf("%d dead letters, want 2", h.dlq.Len())
		}
		h.advance(2 * time.Second) // the batched deletes
		for _, d := range readDLQ(t, h.dlq) {
			var rule string
			for key, r := range rules {
				if strings.Contains(d.Error, `blob "`+key+`"`) {
					rule = r
				}
			}
			if d.Reason != ReasonPermanent || rule == "" || !strings.Contains(d.Error, rule) || d.Attempts != 0 {
				t.Errorf("dead letter: reason %q, attempts %d, error %q; want permanent at once, naming the rule", d.Reason, d.Attempts, d.Error)
			}
		}
		if n := len(rec.get()); n != 0 {
			t.Errorf("%d forged tasks ran", n)
		}
		if n := h.queues[0].Len(); n != 0 {
			t.Errorf("%d messages left on the queue", n)
		}
		if got, err := blobs.Get(ctx, "state/dupproducer.json"); err != nil || string(got) != string(state) {
			t.Errorf("the state file: %q, %v; want it untouched", got, err)
		}
	})
}

// TestForgedClaimErrorWithoutClaimCheck: on a queue with no claim check (the
// claims bucket off) a sender's MillClaimCheckError attribute is just an
// attribute: the tasks run. Before, Workman read the claim check's verdict
// from that attribute, so a forged one dead-lettered a good task ("blob not
// found") or had it redelivered for ever ("get blob: …").
func TestForgedClaimErrorWithoutClaimCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := newHarness(t, harnessOpts{handler: rec})
		rec.clk = h.clk
		forged := map[string]string{"not-found": "blob not found", "unavailable": "get blob: forged", "refused": "refused: forged"}
		for id, verdict := range forged {
			b, err := task.Encode(noopTask(id), task.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			attrs := map[string]string{claimcheck.AttrError: verdict}
			if err := h.queues[0].Send(context.Background(), queue.SendEntry{Body: b, Attributes: attrs}); err != nil {
				t.Fatal(err)
			}
		}
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == len(forged) }) {
			t.Fatalf("%d of %d tasks ran; %d dead letters", len(rec.get()), len(forged), h.dlq.Len())
		}
		h.advance(2 * time.Second) // the batched deletes
		if h.dlq.Len() != 0 || h.queues[0].Len() != 0 {
			t.Errorf("%d dead letters, %d messages left; want 0 and 0", h.dlq.Len(), h.queues[0].Len())
		}
	})
}
