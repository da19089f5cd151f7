package claimcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/queue"
)

// Message attributes the decorator uses.
const (
	// AttrRef carries the blob key of a claim-checked message.
	AttrRef = "MillClaimCheck"
	// AttrError is set on a received message whose blob could not be
	// resolved; its value is the cause.
	AttrError = "MillClaimCheckError"
)

// DefaultThreshold is the default Config.Threshold: 240 KiB, leaving room
// under SQS's 256 KiB for attributes.
const DefaultThreshold = 240 << 10

var (
	// ErrBlobNotFound is the verdict on a reference whose blob is gone:
	// the blob store's blob.ErrNotFound.
	ErrBlobNotFound = blob.ErrNotFound
	// ErrUnresolved reports a reference whose blob did not match it, or a
	// malformed reference.
	ErrUnresolved = errors.New("claimcheck: reference not resolved")
	// ErrBlobUnavailable reports a blob that could not be read this time
	// (the blob store failed): a later delivery may succeed.
	ErrBlobUnavailable = errors.New("claimcheck: blob unavailable")
	// ErrRefused reports a reference whose key is not one the claim check
	// creates (see Queue.Owns): it was neither read nor deleted. It wraps
	// ErrUnresolved; no later delivery can succeed.
	ErrRefused = fmt.Errorf("%w: refused", ErrUnresolved)
)

// Config tunes a Queue. The zero value is ready to use.
type Config struct {
	// Threshold is the largest body sent inline (default
	// DefaultThreshold); longer bodies are claim-checked.
	Threshold int
	// KeyPrefix is prepended to blob keys (for example "claims/").
	KeyPrefix string
}

// defaultConfig holds the values WithDefaults gives a Config's zero or
// negative fields.
var defaultConfig = Config{Threshold: DefaultThreshold}

// WithDefaults returns c with zero or negative fields set to their
// defaults.
func (c Config) WithDefaults() Config {
	defaults.FillNonPositive(&c, defaultConfig)
	return c
}

// Queue is the decorator. Create it with New.
type Queue struct {
	inner queue.Queue
	blobs blob.Store
	cfg   Config
}

var _ queue.Queue = (*Queue)(nil)

// New wraps inner so bodies above cfg.Threshold go to blobs.
func New(inner queue.Queue, blobs blob.Store, cfg Config) *Queue {
	return &Queue{inner: inner, blobs: blobs, cfg: cfg.WithDefaults()}
}

type reference struct {
	Key    string `json:"key"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

type refBody struct {
	Ref reference `json:"millClaimCheck"`
}

// keyIDLen is the length of the random part of a blob key: 16 bytes in
// lower-case hex.
const keyIDLen = 32

func newKey(prefix string) string {
	var b [keyIDLen / 2]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// The rules a reference's key must keep; each is named in the error.
var (
	errEmptyKey      = errors.New("claimcheck: empty key")
	errOutsidePrefix = errors.New("claimcheck: key outside claims prefix")
	errKeyForm       = errors.New("claimcheck: key not in the claim check's form (prefix + 32 lower-case hex digits)")
)

// Owns reports whether key has exactly the shape of the keys Send
// creates — Config.KeyPrefix followed by 32 lower-case hex digits — and if
// not, which rule it breaks. The decorator reads only the blobs of such
// keys (and deletes none with a message): a reference naming anything else
// (another object of the claims bucket, an empty key, a path with "..",
// another prefix) is refused, so a forged message can read nothing that is
// not a claim-checked body.
func (q *Queue) Owns(key string) error {
	switch {
	case key == "":
		return errEmptyKey
	case !strings.HasPrefix(key, q.cfg.KeyPrefix):
		return fmt.Errorf("%w %q", errOutsidePrefix, q.cfg.KeyPrefix)
	}
	id := key[len(q.cfg.KeyPrefix):]
	if len(id) != keyIDLen || strings.IndexFunc(id, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) >= 0 {
		return errKeyForm
	}
	return nil
}

// Unresolved returns the verdict on a received message whose reference
// could not be resolved (queue.Message.Unresolved), or nil. It wraps
// ErrBlobNotFound (the blob is gone), ErrBlobUnavailable (reading it failed;
// worth another delivery), ErrRefused (the key is not the claim check's:
// neither read nor deleted; the error names the rule it broke) or
// ErrUnresolved (a malformed reference or a blob that does not match it).
// Only the decorator sets it; attribute AttrError repeats its cause for
// people and tools that look at the message.
func Unresolved(m *queue.Message) error { return m.Unresolved }

// unresolved is the verdict on message m, whose reference named key: base
// is the sentinel it wraps, cause what went wrong.
func unresolved(m *queue.Message, key string, base error, cause string) error {
	if base == ErrBlobNotFound {
		return fmt.Errorf("message %s, blob %q: %w", m.ID, key, base)
	}
	return fmt.Errorf("message %s, blob %q: %w (%s)", m.ID, cutKey(key), base, cause)
}

// failure is why a reference could not be resolved: the sentinel it
// wraps and the cause.
type failure struct {
	base  error
	cause string
}

// attr is AttrError's value: the cause, a refusal marked as one.
func (f *failure) attr() string {
	if f.base == ErrRefused {
		return "refused: " + f.cause
	}
	return f.cause
}

// cutKey bounds a key quoted in an error: a forged one may be long.
func cutKey(key string) string {
	const n = 200
	if len(key) <= n {
		return key
	}
	return key[:n] + "…"
}

// Name returns the inner queue's name.
func (q *Queue) Name() string { return q.inner.Name() }

// HangUpSafe is the inner queue's (queue.HangUpSafe).
func (q *Queue) HangUpSafe() bool { return queue.SafeToHangUp(q.inner) }

// Send stores each body above the threshold as a blob and sends a reference
// in its place. An entry whose blob cannot be stored fails in the
// *queue.BatchError without being sent.
func (q *Queue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	failed := map[int]error{}
	out := make([]queue.SendEntry, 0, len(entries))
	orig := make([]int, 0, len(entries)) // out index → argument index
	keys := map[int]string{}             // out index → blob key
	for i, e := range entries {
		if len(e.Body) <= q.cfg.Threshold {
			out, orig = append(out, e), append(orig, i)
			continue
		}
		sum := sha256.Sum256(e.Body)
		ref := reference{Key: newKey(q.cfg.KeyPrefix), Size: len(e.Body), SHA256: hex.EncodeToString(sum[:])}
		if err := q.blobs.Put(ctx, ref.Key, e.Body); err != nil {
			failed[i] = fmt.Errorf("claimcheck: put %q: %w", ref.Key, err)
			continue
		}
		body, _ := json.Marshal(refBody{Ref: ref})
		attrs := maps.Clone(e.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs[AttrRef] = ref.Key
		keys[len(out)] = ref.Key
		out, orig = append(out, queue.SendEntry{Body: body, Delay: e.Delay, Attributes: attrs, Group: e.Group}), append(orig, i)
	}
	if len(out) > 0 {
		err := q.inner.Send(ctx, out...)
		var be *queue.BatchError
		isBatch := errors.As(err, &be)
		for _, j := range queue.FailedIndexes(err, len(out)) {
			cause := err
			if isBatch {
				cause = be.Failed[j]
			}
			failed[orig[j]] = cause
			if key, ok := keys[j]; ok {
				// Not sent: the blob would be orphaned. Best effort;
				// a leftover blob is harmless.
				_ = q.blobs.Delete(context.WithoutCancel(ctx), key)
			}
		}
	}
	if len(failed) > 0 {
		return &queue.BatchError{Op: "send", Failed: failed}
	}
	return nil
}

// Receive receives from the inner queue and resolves references (see the
// package documentation for unresolvable ones).
func (q *Queue) Receive(ctx context.Context, n int, wait time.Duration) ([]*queue.Message, error) {
	return q.ReceiveWith(ctx, queue.ReceiveOptions{Max: n, Wait: wait})
}

// ReceiveWith receives from the inner queue with o and resolves references
// as Receive does.
func (q *Queue) ReceiveWith(ctx context.Context, o queue.ReceiveOptions) ([]*queue.Message, error) {
	ms, err := q.inner.ReceiveWith(ctx, o)
	if err != nil {
		return ms, err
	}
	if err := q.resolveAll(ctx, ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// resolveAll replaces the reference bodies of received messages, marking
// the unresolvable ones. It fails only when ctx ends: the messages then
// come back after their visibility timeout.
func (q *Queue) resolveAll(ctx context.Context, ms []*queue.Message) error {
	for _, m := range ms {
		// AttrError is the decorator's own verdict: one that came with
		// the message is a sender's forgery (it would make the message
		// "unavailable" for ever).
		delete(m.Attributes, AttrError)
		m.Unresolved = nil
		key, ok := m.Attributes[AttrRef]
		if !ok {
			continue
		}
		if f := q.resolve(ctx, key, m); f != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			m.Attributes[AttrError] = f.attr()
			m.Unresolved = unresolved(m, key, f.base, f.cause)
		}
	}
	return nil
}

func (q *Queue) resolve(ctx context.Context, key string, m *queue.Message) *failure {
	if err := q.Owns(key); err != nil {
		return &failure{ErrRefused, err.Error()}
	}
	var rb refBody
	if err := json.Unmarshal(m.Body, &rb); err != nil || rb.Ref.Key != key {
		return &failure{ErrUnresolved, "malformed reference body"}
	}
	data, err := q.blobs.Get(ctx, key)
	if errors.Is(err, ErrBlobNotFound) {
		return &failure{ErrBlobNotFound, "blob not found"}
	}
	if err != nil {
		return &failure{ErrBlobUnavailable, fmt.Sprintf("get blob: %v", err)}
	}
	sum := sha256.Sum256(data)
	if len(data) != rb.Ref.Size || hex.EncodeToString(sum[:]) != rb.Ref.SHA256 {
		return &failure{ErrUnresolved, fmt.Sprintf("blob has %d bytes and a different checksum than the reference's %d", len(data), rb.Ref.Size)}
	}
	m.Body = bytes.Clone(data)
	return nil
}

// Delete deletes the messages and leaves their blobs: a blob is never
// deleted with a message, only by the claims bucket's expiry rule, which
// outlives every queue's retention. A message's key is no secret — anyone
// who can read the queue can copy a reference into a message of their own —
// so deleting blobs with messages would let a forged copy (or a redelivery
// of a message already deleted) take the original message's body with it.
func (q *Queue) Delete(ctx context.Context, msgs ...*queue.Message) error {
	return q.inner.Delete(ctx, msgs...)
}

// ChangeVisibility passes through.
func (q *Queue) ChangeVisibility(ctx context.Context, changes ...queue.VisibilityChange) error {
	return q.inner.ChangeVisibility(ctx, changes...)
}

// Release passes through.
func (q *Queue) Release(ctx context.Context, msgs ...*queue.Message) error {
	return q.inner.Release(ctx, msgs...)
}

// Purge purges the inner queue. The blobs of the purged messages stay
// (their keys are known only from the messages); `millctl setup` expires
// the claims prefix, so they go in time.
func (q *Queue) Purge(ctx context.Context) error { return q.inner.Purge(ctx) }

// Depth passes through.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) { return q.inner.Depth(ctx) }

// VisibilityTimeout passes through.
func (q *Queue) VisibilityTimeout(ctx context.Context) (time.Duration, error) {
	return q.inner.VisibilityTimeout(ctx)
}
