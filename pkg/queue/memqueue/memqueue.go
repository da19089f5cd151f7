package memqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// Defaults of Config.
const (
	DefaultVisibilityTimeout = 30 * time.Second
	DefaultMaxBodyBytes      = 256 << 10
)

// Operation names used by Requests and Config.Fault. The request names are
// the SQS API calls the same work costs on SQS.
const (
	OpSend             = "SendMessageBatch"
	OpReceive          = "ReceiveMessage"
	OpDelete           = "DeleteMessageBatch"
	OpChangeVisibility = "ChangeMessageVisibilityBatch"
	OpGetAttributes    = "GetQueueAttributes"
	OpPurge            = "PurgeQueue"
)

// Config configures a Queue. The zero value is ready to use.
type Config struct {
	// VisibilityTimeout is how long a received message stays invisible
	// (default DefaultVisibilityTimeout, at most queue.MaxVisibility).
	VisibilityTimeout time.Duration
	// MaxReceiveCount > 0 moves a message to DeadLetter on the receive that
	// would make its ReceiveCount exceed it, as SQS redrive does. 0 = no
	// redrive. It has no effect without DeadLetter.
	MaxReceiveCount int
	// DeadLetter is where messages go after MaxReceiveCount receives. A
	// moved message keeps its ID, body, attributes and SentAt; its
	// ReceiveCount starts again from 0.
	DeadLetter *Queue
	// Clock drives visibility, delays and long-poll waits (default
	// clock.Real{}). Tests pass a *clock.Fake.
	Clock clock.Clock
	// MaxBodyBytes is the largest message accepted, body plus attribute
	// names and values (default DefaultMaxBodyBytes); a larger entry fails
	// with queue.ErrTooLarge.
	MaxBodyBytes int
	// Fault, when set, is called before each entry of a batch operation is
	// applied, with the operation (OpSend, OpDelete, OpChangeVisibility —
	// Release included) and the entry's index in the call; a non-nil error
	// fails that entry (it is reported in the *queue.BatchError and not
	// applied). For OpReceive it is called once per call with index -1 and
	// a non-nil error fails the call. Tests use it to exercise failure
	// paths.
	Fault func(op string, index int) error
	// Fair delivers as an SQS fair queue does (fair.go): the messages of a
	// noisy tenant (Group) go after the other tenants' visible messages.
	Fair bool
}

// defaultConfig holds the values WithDefaults gives a Config's zero or
// negative fields.
var defaultConfig = Config{VisibilityTimeout: DefaultVisibilityTimeout, MaxBodyBytes: DefaultMaxBodyBytes, Clock: clock.Real{}}

// WithDefaults returns c with zero or negative fields set to their
// defaults.
func (c Config) WithDefaults() Config {
	defaults.FillNonPositive(&c, defaultConfig)
	c.VisibilityTimeout = min(c.VisibilityTimeout, queue.MaxVisibility)
	return c
}

// Queue is an in-memory queue. Create it with New.
type Queue struct {
	name string
	cfg  Config

	mu       sync.Mutex
	msgs     []*message          // send order; gone entries compacted lazily
	gone     int                 // gone entries still in msgs
	receipts map[string]*message // current receipt handle → message
	changed  chan struct{}       // closed and replaced on every change
	seq      uint64              // receipt counter
	requests queue.Counts
}

var _ queue.Queue = (*Queue)(nil)

type message struct {
	id           string
	body         []byte
	attrs        map[string]string
	group        string
	sentAt       time.Time
	visibleAt    time.Time
	receiveCount int
	receipt      string
	inFlight     bool // received and not released; in flight while visibleAt is ahead
	gone         bool
}

// New returns an empty queue called name.
func New(name string, cfg Config) *Queue {
	return &Queue{
		name:     name,
		cfg:      cfg.WithDefaults(),
		receipts: make(map[string]*message),
		changed:  make(chan struct{}),
	}
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// HangUpSafe: a Receive cancelled while it waits takes no message
// (queue.HangUpSafe).
func (q *Queue) HangUpSafe() bool { return true }

// VisibilityTimeout returns the configured visibility timeout.
func (q *Queue) VisibilityTimeout(context.Context) (time.Duration, error) {
	return q.cfg.VisibilityTimeout, nil
}

func (q *Queue) notifyLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *Queue) countLocked(op string, entries int) {
	n := int64(1)
	if entries > queue.MaxBatch {
		n = int64((entries + queue.MaxBatch - 1) / queue.MaxBatch)
	}
	q.requests.Add(op, n)
}

func (q *Queue) fault(op string, i int) error {
	if q.cfg.Fault == nil {
		return nil
	}
	return q.cfg.Fault(op, i)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// accept stores messages moved here by another queue's redrive.
func (q *Queue) accept(moved []*message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for _, m := range moved {
		q.msgs = append(q.msgs, &message{
			id:        m.id,
			body:      m.body,
			attrs:     m.attrs,
			group:     m.group,
			sentAt:    m.sentAt,
			visibleAt: now,
		})
	}
	q.notifyLocked()
}

// takeLocked delivers up to max visible messages, invisible for vis, and
// removes those due for redrive. next is the earliest future time a message
// becomes visible (zero if none).
func (q *Queue) takeLocked(now time.Time, max int, vis time.Duration) (out []*queue.Message, moved []*message, next time.Time) {
	redrive := q.cfg.MaxReceiveCount > 0 && q.cfg.DeadLetter != nil
	for _, m := range q.deliveryOrderLocked(now) {
		if m.gone {
			continue
		}
		if now.Before(m.visibleAt) {
			if next.IsZero() || m.visibleAt.Before(next) {
				next = m.visibleAt
			}
			continue
		}
		if len(out) == max {
			continue // keep scanning only for next; visible ones need no timer
		}
		if redrive && m.receiveCount >= q.cfg.MaxReceiveCount {
			q.removeLocked(m)
			moved = append(moved, m)
			continue
		}
		delete(q.receipts, m.receipt)
		q.seq++
		m.receiveCount++
		m.receipt = m.id + "#" + strconv.FormatUint(q.seq, 10)
		m.inFlight = true
		m.visibleAt = now.Add(vis)
		q.receipts[m.receipt] = m
		if next.IsZero() || m.visibleAt.Before(next) {
			next = m.visibleAt
		}
		out = append(out, &queue.Message{
			ID:            m.id,
			ReceiptHandle: m.receipt,
			Body:          append([]byte(nil), m.body...),
			ReceiveCount:  m.receiveCount,
			SentAt:        m.sentAt,
			Group:         m.group,
			Attributes:    maps.Clone(m.attrs),
		})
	}
	q.compactLocked()
	return out, moved, next
}

func (q *Queue) removeLocked(m *message) {
	m.gone = true
	q.gone++
	delete(q.receipts, m.receipt)
}

func (q *Queue) compactLocked() {
	if q.gone < 64 || q.gone < len(q.msgs)/2 {
		return
	}
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		if !m.gone {
			kept = append(kept, m)
		}
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
	q.gone = 0
}

// Receive is ReceiveWith with the queue's visibility timeout.
func (q *Queue) Receive(ctx context.Context, n int, wait time.Duration) ([]*queue.Message, error) {
	return q.ReceiveWith(ctx, queue.ReceiveOptions{Max: n, Wait: wait})
}

// ReceiveWith returns up to o.Max visible messages (clamped to
// 1..queue.MaxBatch), oldest first, waiting up to o.Wait (clamped to
// 0..queue.MaxWait) on the queue's clock for the first one, and keeps them
// invisible for o.Visibility (the queue's visibility timeout when 0). The
// wait ends as soon as a message is available or ctx is done (then it
// returns ctx.Err()).
func (q *Queue) ReceiveWith(ctx context.Context, o queue.ReceiveOptions) ([]*queue.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := o.CheckVisibility(); err != nil {
		return nil, err
	}
	n := min(max(o.Max, 1), queue.MaxBatch)
	wait := min(max(o.Wait, 0), queue.MaxWait)
	vis := q.cfg.VisibilityTimeout
	if o.Visibility > 0 {
		vis = o.Visibility
	}
	q.mu.Lock()
	q.countLocked(OpReceive, 1)
	q.mu.Unlock()
	if err := q.fault(OpReceive, -1); err != nil {
		return nil, err
	}
	deadline := q.cfg.Clock.Now().Add(wait)
	for {
		q.mu.Lock()
		now := q.cfg.Clock.Now()
		out, moved, next := q.takeLocked(now, n, vis)
		ch := q.changed
		q.mu.Unlock()
		if len(moved) > 0 {
			q.cfg.DeadLetter.accept(moved)
		}
		if len(out) > 0 {
			return out, nil
		}
		if !now.Before(deadline) {
			return nil, nil
		}
		d := deadline.Sub(now)
		if !next.IsZero() && next.Sub(now) < d {
			d = next.Sub(now)
		}
		t := q.cfg.Clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-ch:
			t.Stop()
		case <-t.C():
		}
	}
}

// Delete removes the messages delivered under the given receipt handles. A
// receipt handle that is no longer current (the message is gone, or was
// delivered again since) deletes nothing and is not an error, as on SQS.
func (q *Queue) Delete(ctx context.Context, msgs ...*queue.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	failed := map[int]error{}
	q.mu.Lock()
	q.countLocked(OpDelete, len(msgs))
	for i, msg := range msgs {
		if err := q.fault(OpDelete, i); err != nil {
			failed[i] = err
			continue
		}
		if msg == nil {
			failed[i] = fmt.Errorf("nil message: %w", queue.ErrInvalid)
			continue
		}
		if m, ok := q.receipts[msg.ReceiptHandle]; ok {
			q.removeLocked(m)
		}
	}
	q.compactLocked()
	q.notifyLocked()
	q.mu.Unlock()
	if len(failed) > 0 {
		return &queue.BatchError{Op: "delete", Failed: failed}
	}
	return nil
}

// ChangeVisibility makes each message invisible for its Timeout
// (0..queue.MaxVisibility) counted from now. An entry whose receipt handle no
// longer names an in-flight delivery fails with queue.ErrReceiptInvalid.
func (q *Queue) ChangeVisibility(ctx context.Context, changes ...queue.VisibilityChange) error {
	return q.changeVisibility(ctx, "change visibility", false, changes)
}

// Release makes the messages visible again at once. A message no longer in
// flight under its receipt handle is skipped without error.
func (q *Queue) Release(ctx context.Context, msgs ...*queue.Message) error {
	ch := make([]queue.VisibilityChange, len(msgs))
	for i, m := range msgs {
		ch[i] = queue.VisibilityChange{Message: m}
	}
	return q.changeVisibility(ctx, "release", true, ch)
}

func (q *Queue) changeVisibility(ctx context.Context, op string, release bool, changes []queue.VisibilityChange) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil
	}
	failed := map[int]error{}
	q.mu.Lock()
	q.countLocked(OpChangeVisibility, len(changes))
	now := q.cfg.Clock.Now()
	for i, c := range changes {
		if err := q.fault(OpChangeVisibility, i); err != nil {
			failed[i] = err
			continue
		}
		if c.Message == nil {
			failed[i] = fmt.Errorf("nil message: %w", queue.ErrInvalid)
			continue
		}
		if c.Timeout < 0 || c.Timeout > queue.MaxVisibility {
			failed[i] = fmt.Errorf("visibility %v outside 0..%v: %w", c.Timeout, queue.MaxVisibility, queue.ErrInvalid)
			continue
		}
		m, ok := q.receipts[c.Message.ReceiptHandle]
		if !ok || !m.inFlight || !now.Before(m.visibleAt) {
			if !release {
				failed[i] = fmt.Errorf("message %s: %w", c.Message.ID, queue.ErrReceiptInvalid)
			}
			continue
		}
		m.visibleAt = now.Add(c.Timeout)
		if c.Timeout == 0 {
			m.inFlight = false
		}
	}
	q.notifyLocked()
	q.mu.Unlock()
	if len(failed) > 0 {
		return &queue.BatchError{Op: op, Failed: failed}
	}
	return nil
}

// Depth counts the stored messages by state (exactly, unlike SQS).
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	if err := ctx.Err(); err != nil {
		return queue.Depth{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.countLocked(OpGetAttributes, 1)
	var d queue.Depth
	now := q.cfg.Clock.Now()
	for _, m := range q.msgs {
		switch m.state(now) {
		case Visible:
			d.Visible++
		case InFlight:
			d.InFlight++
		case Delayed:
			d.Delayed++
		}
	}
	return d, nil
}

// Purge deletes every stored message at once (SQS takes up to a minute;
// there is no limit on how often).
func (q *Queue) Purge(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.countLocked(OpPurge, 1)
	clear(q.receipts)
	clear(q.msgs)
	q.msgs = nil
	q.gone = 0
	q.notifyLocked()
	return nil
}
