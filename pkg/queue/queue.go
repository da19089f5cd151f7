package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Limits shared by every implementation (they are SQS's).
const (
	// MaxBatch is the most entries one Send, Delete or ChangeVisibility call
	// hands to the service in one request, and the most messages one Receive
	// returns.
	MaxBatch = 10
	// MaxDelay is the longest delay a sent message may carry.
	MaxDelay = 15 * time.Minute
	// MaxVisibility is the longest visibility timeout a message may be given.
	MaxVisibility = 12 * time.Hour
	// MaxWait is the longest long-poll wait of one Receive.
	MaxWait = 20 * time.Second
)

// Message is one received message. ReceiptHandle identifies this delivery; it
// is what Delete, ChangeVisibility and Release act on.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          []byte
	// ReceiveCount is how many times the message has been received,
	// this delivery included (SQS ApproximateReceiveCount).
	ReceiveCount int
	// SentAt is when the message was first sent (SQS SentTimestamp).
	SentAt time.Time
	// Group is the tenant the message was sent for (SendEntry.Group, SQS
	// MessageGroupId); "" when it was sent without one.
	Group string
	// Attributes are the string message attributes the message was sent
	// with (SendEntry.Attributes), plus those a decorator adds (the
	// claim-check reference and its verdict).
	Attributes map[string]string
	// Unresolved is set by a decorator that could not make the message
	// whole (pkg/queue/claimcheck: a reference it could not resolve); the
	// body is then not the message sent, and the error says why. It never
	// comes from the wire: an attribute cannot forge it.
	Unresolved error
}

// SendEntry is one message to send.
type SendEntry struct {
	Body  []byte
	Delay time.Duration // 0..MaxDelay; the message is invisible until then
	// Attributes are string message attributes sent with the body.
	Attributes map[string]string
	// Group is the tenant the message belongs to (Mill: the task's
	// account), sent as SQS MessageGroupId: on a standard queue SQS fair
	// queues de-prioritise a tenant holding a disproportionate share of
	// the in-flight messages. "" = none (each such message counts as a
	// tenant of its own). It must pass CheckGroup.
	Group string
}

// MaxGroupLen is the longest Group (SQS MessageGroupId: 128 characters).
const MaxGroupLen = 128

// CheckGroup returns an ErrInvalid error for a non-empty group that SQS
// would refuse as a MessageGroupId: it must be 1..MaxGroupLen ASCII
// letters, digits and punctuation.
func CheckGroup(g string) error {
	if g == "" {
		return nil
	}
	if len(g) > MaxGroupLen {
		return fmt.Errorf("group of %d characters > %d: %w", len(g), MaxGroupLen, ErrInvalid)
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("group %.40q: only ASCII letters, digits and punctuation: %w", g, ErrInvalid)
		}
	}
	return nil
}

// GroupFor returns s as a Group if CheckGroup accepts it, else "" (no
// group): a tenant name SQS cannot carry costs the message its fairness,
// never its delivery.
func GroupFor(s string) string {
	if s == "" || CheckGroup(s) != nil {
		return ""
	}
	return s
}

// ReceiveOptions are the settings of one ReceiveWith call.
type ReceiveOptions struct {
	// Max is the most messages returned (clamped to 1..MaxBatch).
	Max int
	// Wait is the longest long-poll wait for the first message (clamped
	// to 0..MaxWait).
	Wait time.Duration
	// Visibility, when positive, is how long the received messages stay
	// invisible instead of the queue's visibility timeout: a tool that
	// looks at messages and puts them back holds them only briefly. At
	// most MaxVisibility; SQS counts whole seconds (rounded up).
	Visibility time.Duration
}

// VisibilityChange sets the visibility timeout of one received message,
// counted from now.
type VisibilityChange struct {
	Message *Message
	Timeout time.Duration
}

// Depth is the approximate number of messages in a queue by state.
type Depth struct {
	Visible  int64 // ready to be received
	InFlight int64 // received and not yet deleted or visible again
	Delayed  int64 // sent with a delay that has not yet passed
}

// Total is Visible + InFlight + Delayed.
func (d Depth) Total() int64 { return d.Visible + d.InFlight + d.Delayed }

// Queue is one message queue with SQS standard-queue semantics.
//
// Contract (every implementation passes queuetest.Run):
//
//   - Delivery is at least once. A received message stays invisible to other
//     receivers for the queue's visibility timeout; if it is not deleted in
//     that time it becomes visible again and is delivered again with its
//     ReceiveCount increased. Order is not guaranteed. Consumers must be
//     idempotent.
//   - Send accepts any number of entries and sends them in batches of at most
//     MaxBatch. Receive returns at most max (≤ MaxBatch) messages, waiting up
//     to wait (≤ MaxWait) for the first one; it returns early when a message
//     arrives and returns ctx.Err() when ctx is cancelled while waiting. An
//     empty result with a nil error means the queue had nothing visible.
//     ReceiveWith is Receive with options: Receive(ctx, n, w) is
//     ReceiveWith(ctx, ReceiveOptions{Max: n, Wait: w}); a Visibility
//     outside 0..MaxVisibility fails the call with ErrInvalid.
//   - A received message carries the string attributes it was sent with
//     (SendEntry.Attributes), its Group, its ReceiveCount and SentAt. A
//     Group CheckGroup refuses fails its entry with ErrInvalid.
//   - Delete removes delivered messages; deleting a message that is already
//     gone is success. ChangeVisibility extends (or shortens) how long a
//     message stays invisible, counted from the call. Release makes messages
//     visible again at once (visibility 0). Purge deletes every message
//     of the queue (visible, in flight and delayed); on SQS it completes
//     within 60 s, messages sent meanwhile may be deleted too, and a
//     queue can be purged once per 60 s (a second Purge fails with
//     ErrPurgeInProgress).
//   - Batch operations report per-entry failures as a *BatchError after the
//     implementation has retried what can be retried; entries not named in it
//     succeeded. No failure is ever dropped silently.
//   - A message whose ReceiveCount exceeds the queue's redrive limit is moved
//     to the queue's dead-letter queue by the service (if one is configured).
//   - All methods are safe for concurrent use. Cancelling ctx abandons the
//     call; what the service already did stays done.
type Queue interface {
	// Name is the queue's name (for logs and metrics).
	Name() string
	Send(ctx context.Context, entries ...SendEntry) error
	Receive(ctx context.Context, max int, wait time.Duration) ([]*Message, error)
	ReceiveWith(ctx context.Context, o ReceiveOptions) ([]*Message, error)
	Delete(ctx context.Context, msgs ...*Message) error
	ChangeVisibility(ctx context.Context, changes ...VisibilityChange) error
	Release(ctx context.Context, msgs ...*Message) error
	Depth(ctx context.Context) (Depth, error)
	Purge(ctx context.Context) error
	// VisibilityTimeout is the queue's default visibility timeout.
	VisibilityTimeout(ctx context.Context) (time.Duration, error)
}

// HangUpSafe is implemented by a queue whose Receive, cancelled while it
// waits, takes no message (an in-process queue). SQS's long poll is not:
// it goes on waiting on the server when its caller hangs up, and a message
// it takes then stays invisible for the whole visibility timeout.
type HangUpSafe interface{ HangUpSafe() bool }

// SafeToHangUp reports whether cancelling q's Receive strands no message
// (q implements HangUpSafe and says so).
func SafeToHangUp(q Queue) bool {
	h, ok := q.(HangUpSafe)
	return ok && h.HangUpSafe()
}

// CheckVisibility returns an ErrInvalid error for a ReceiveOptions
// Visibility outside 0..MaxVisibility.
func (o ReceiveOptions) CheckVisibility() error {
	if o.Visibility < 0 || o.Visibility > MaxVisibility {
		return fmt.Errorf("receive visibility %v outside 0..%v: %w", o.Visibility, MaxVisibility, ErrInvalid)
	}
	return nil
}

// ErrNotFound reports that a queue does not exist.
var ErrNotFound = errors.New("queue: not found")

// ErrPurgeInProgress reports a Purge within 60 s of the queue's last one
// (SQS allows one purge a minute): try again later.
var ErrPurgeInProgress = errors.New("queue: a purge is in progress")

// ErrTooLarge reports a message body larger than the queue accepts.
var ErrTooLarge = errors.New("queue: message too large")

// BatchError reports the entries of a batch call that failed, by their index
// in the call's arguments.
type BatchError struct {
	Op     string        // "send", "delete", "change visibility", "release"
	Failed map[int]error // index in the call's arguments → cause
}

func (e *BatchError) Error() string {
	idx := make([]int, 0, len(e.Failed))
	for i := range e.Failed {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var b strings.Builder
	fmt.Fprintf(&b, "queue: %s: %d entries failed", e.Op, len(e.Failed))
	for n, i := range idx {
		if n == 3 {
			fmt.Fprintf(&b, "; …")
			break
		}
		fmt.Fprintf(&b, "; [%d] %v", i, e.Failed[i])
	}
	return b.String()
}

// Unwrap returns the causes, so errors.Is finds ErrTooLarge and the like.
func (e *BatchError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, err := range e.Failed {
		out = append(out, err)
	}
	return out
}

// FailedIndexes returns the failed indexes of err if it is a *BatchError, or
// every index 0..n-1 for any other non-nil error, or nil for nil.
func FailedIndexes(err error, n int) []int {
	if err == nil {
		return nil
	}
	var be *BatchError
	if errors.As(err, &be) {
		out := make([]int, 0, len(be.Failed))
		for i := range be.Failed {
			out = append(out, i)
		}
		sort.Ints(out)
		return out
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
