package claimcheck_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

// spyBlobs records every key the decorator reads or deletes.
type spyBlobs struct {
	*memblob.Store
	mu      sync.Mutex
	gets    []string
	deletes []string
}

func (s *spyBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	s.gets = append(s.gets, key)
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

func (s *spyBlobs) Delete(ctx context.Context, keys ...string) error {
	s.mu.Lock()
	s.deletes = append(s.deletes, keys...)
	s.mu.Unlock()
	return s.Store.Delete(ctx, keys...)
}

// forgedRef is a reference body naming key, as a sender who knows the wire
// format (and the target's checksum) would write it.
func forgedRef(key string, data []byte) []byte {
	b, _ := json.Marshal(map[string]any{"millClaimCheck": map[string]any{"key": key, "size": len(data), "sha256": sha(data)}})
	return b
}

// TestForeignReferenceRefused: a reference is honoured only when its key
// has the shape the claim check creates (prefix + 32 lower-case hex
// digits). Any other key — the producers' state file in the same bucket,
// an empty key, a key climbing out with "..", another prefix, an S3 URL of
// another bucket — is refused: never read, never deleted (not by Delete
// either), and marked with ErrRefused naming the rule. Before this rule
// the state file was read and then deleted with the message, and an empty
// key was "unavailable" for ever.
func TestForeignReferenceRefused(t *testing.T) {
	ctx := context.Background()
	inner := memqueue.New("cc", memqueue.Config{Clock: clock.NewFake(time.Time{})})
	blobs := &spyBlobs{Store: memblob.New(nil)}
	q := claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/"})

	state := []byte(`{"producer":"dup","cursor":"acme/photos/img-0042.jpg"}`)
	foreign := map[string]string{
		"state/dupproducer.json":           "key outside claims prefix",
		"":                                 "empty key",
		"claims/../state/dupproducer.json": "key not in the claim check's form",
		"claims/":                          "key not in the claim check's form",
		"claims/0123456789abcdef0123456789abcdef/../x":      "key not in the claim check's form",
		"claims/0123456789ABCDEF0123456789ABCDEF":           "key not in the claim check's form",
		"claims/0123456789abcdef0123456789abcde":            "key not in the claim check's form",
		"other/0123456789abcdef0123456789abcdef":            "key outside claims prefix",
		"s3://other-bucket/claims/0123456789abcdef01234567": "key outside claims prefix",
		"/claims/0123456789abcdef0123456789abcdef":          "key outside claims prefix",
	}
	// The foreign keys a blob store can hold (blob.CheckKey) hold the state.
	held := func(key string) bool { return blob.CheckKey(key) == nil }
	for key := range foreign {
		if held(key) {
			if err := blobs.Store.Put(ctx, key, state); err != nil {
				t.Fatal(err)
			}
		}
		// A forged error attribute must not survive either: it would make
		// a message "unavailable" (redelivered) for ever.
		attrs := map[string]string{claimcheck.AttrRef: key, claimcheck.AttrError: "get blob: forged"}
		if err := inner.Send(ctx, queue.SendEntry{Body: forgedRef(key, state), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := q.Receive(ctx, 10, 0)
	if err != nil || len(ms) != len(foreign) {
		t.Fatalf("receive: %v, %d messages, want %d", err, len(ms), len(foreign))
	}
	for _, m := range ms {
		key := m.Attributes[claimcheck.AttrRef]
		err := claimcheck.Unresolved(m)
		if !errors.Is(err, claimcheck.ErrRefused) || !errors.Is(err, claimcheck.ErrUnresolved) ||
			errors.Is(err, claimcheck.ErrBlobUnavailable) || errors.Is(err, claimcheck.ErrBlobNotFound) {
			t.Errorf("reference %q: Unresolved = %v, want ErrRefused (an ErrUnresolved)", key, err)
			continue
		}
		if want := "claimcheck: " + foreign[key]; !strings.Contains(err.Error(), want) {
			t.Errorf("reference %q: %v; want the rule named (%q)", key, err, want)
		}
		if string(m.Body) == string(state) {
			t.Errorf("reference %q resolved to the foreign object", key)
		}
	}
	if err := q.Delete(ctx, ms...); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if inner.Len() != 0 {
		t.Errorf("%d messages left; a refused message is still deleted", inner.Len())
	}
	blobs.mu.Lock()
	defer blobs.mu.Unlock()
	if len(blobs.gets) != 0 || len(blobs.deletes) != 0 {
		t.Errorf("foreign keys touched: read %q, deleted %q; want none", blobs.gets, blobs.deletes)
	}
	for key := range foreign {
		if !held(key) {
			continue
		}
		if got, err := blobs.Store.Get(ctx, key); err != nil || string(got) != string(state) {
			t.Errorf("%q after the forged messages: %q, %v; want it unchanged", key, got, err)
		}
	}
}

// TestOwnReferenceStillResolves: a reference of the claim check's own shape
// is read (and, like every blob, left to the claims expiry), and a forged
// error attribute on an ordinary message is dropped.
func TestOwnReferenceStillResolves(t *testing.T) {
	ctx := context.Background()
	inner := memqueue.New("cc", memqueue.Config{Clock: clock.NewFake(time.Time{})})
	blobs := &spyBlobs{Store: memblob.New(nil)}
	q := claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/", Threshold: 8})
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("a body over eight bytes")}); err != nil {
		t.Fatal(err)
	}
	if err := inner.Send(ctx, queue.SendEntry{Body: []byte("small"), Attributes: map[string]string{claimcheck.AttrError: "blob not found"}}); err != nil {
		t.Fatal(err)
	}
	ms, err := q.Receive(ctx, 10, 0)
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %v, %d", err, len(ms))
	}
	for _, m := range ms {
		if err := claimcheck.Unresolved(m); err != nil {
			t.Errorf("%q: %v", m.Body, err)
		}
	}
	if err := q.Delete(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	if blobs.Len() != 1 || len(blobs.deletes) != 0 || len(blobs.gets) != 1 {
		t.Errorf("%d blobs left, %d reads, %d deletes; want 1, 1, 0", blobs.Len(), len(blobs.gets), len(blobs.deletes))
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestForgedCopyCannotDeleteOriginal: a reference of the right shape copied
// from another message (body and attribute) resolves — its task runs once
// more, which idempotent tasks allow — but deleting it must not take the
// original message's body with it: the original still resolves after the
// copy is deleted, and after the original's own delete a redelivery of it
// (SQS delivers at least once) still does.
func TestForgedCopyCannotDeleteOriginal(t *testing.T) {
	ctx := context.Background()
	inner := memqueue.New("cc", memqueue.Config{Clock: clock.NewFake(time.Time{})})
	blobs := memblob.New(nil)
	q := claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/", Threshold: 8})
	body := []byte("the original body, over eight bytes")
	if err := q.Send(ctx, queue.SendEntry{Body: body}); err != nil {
		t.Fatal(err)
	}
	orig := inner.Messages()[0]
	// The forger copies the reference into a message of its own.
	if err := inner.Send(ctx, queue.SendEntry{Body: orig.Body, Attributes: orig.Attributes}); err != nil {
		t.Fatal(err)
	}
	ms, err := q.Receive(ctx, 10, 0)
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %v, %d", err, len(ms))
	}
	var forged, original *queue.Message
	for _, m := range ms {
		if m.ID == orig.ID {
			original = m
		} else {
			forged = m
		}
	}
	if err := q.Delete(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx, original); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ms, err = q.Receive(ctx, 10, 0)
		if err != nil || len(ms) != 1 {
			t.Fatalf("receive the original again: %v, %d", err, len(ms))
		}
		if err := claimcheck.Unresolved(ms[0]); err != nil || !bytes.Equal(ms[0].Body, body) {
			t.Fatalf("the original after its forged copy was deleted: %q, %v", ms[0].Body, err)
		}
		// Deleted, then delivered again (a duplicate delivery): re-send
		// it as SQS would.
		if err := q.Delete(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if err := inner.Send(ctx, queue.SendEntry{Body: orig.Body, Attributes: orig.Attributes}); err != nil {
			t.Fatal(err)
		}
	}
}
