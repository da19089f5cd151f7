package claimcheck_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

// FuzzReference puts an arbitrary reference body with an arbitrary
// reference attribute on the inner queue, next to a stored blob, and
// receives it through the decorator. Receive never fails or panics because
// of a bad reference; a message it resolves carries exactly the stored
// blob and matches its reference's size and SHA-256; every other one is
// flagged with an error wrapping ErrUnresolved or ErrBlobNotFound. The
// blob stored under a key the claim check does not own (a state file in
// the same bucket) is never read into a message nor deleted.
func FuzzReference(f *testing.F) {
	const k = "claims/0123456789abcdef0123456789abcdef"
	const foreign = "state/producer.json"
	blob := []byte("the claim-checked body")
	sum := sha256.Sum256(blob)
	good := `{"millClaimCheck":{"key":"` + k + `","size":22,"sha256":"` + hex.EncodeToString(sum[:]) + `"}}`
	f.Add([]byte(good), k)
	f.Add([]byte(good), "claims/fedcba9876543210fedcba9876543210")
	f.Add([]byte(`{"millClaimCheck":{"key":"`+k+`","size":22,"sha256":"00"}}`), k)
	f.Add([]byte(`{"millClaimCheck":{"key":"claims/missing","size":0,"sha256":""}}`), "claims/missing")
	f.Add([]byte(`{"millClaimCheck":{"key":"`+foreign+`","size":22,"sha256":"`+hex.EncodeToString(sum[:])+`"}}`), foreign)
	f.Add([]byte(`{"millClaimCheck":null}`), "")
	f.Add([]byte(`not json`), k)
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		ctx := context.Background()
		inner := memqueue.New("cc", memqueue.Config{Clock: clock.NewFake(time.Time{})})
		blobs := memblob.New(nil)
		for _, key := range []string{k, foreign} {
			if err := blobs.Put(ctx, key, blob); err != nil {
				t.Fatal(err)
			}
		}
		q := claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/"})
		if err := inner.Send(ctx, queue.SendEntry{Body: body, Attributes: map[string]string{claimcheck.AttrRef: key}}); err != nil {
			return // the memory queue refused the entry (size): not the decorator's input
		}
		ms, err := q.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatalf("Receive with reference %q / body %q: %v", key, body, err)
		}
		if len(ms) != 1 {
			t.Fatalf("received %d messages, want 1", len(ms))
		}
		m := ms[0]
		uerr := claimcheck.Unresolved(m)
		if err := q.Delete(ctx, m); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := blobs.Get(ctx, foreign); err != nil {
			t.Fatalf("reference %q: the foreign object is gone: %v", key, err)
		}
		if uerr != nil {
			if !errors.Is(uerr, claimcheck.ErrUnresolved) && !errors.Is(uerr, claimcheck.ErrBlobNotFound) {
				t.Fatalf("Unresolved = %v, want ErrUnresolved or ErrBlobNotFound", uerr)
			}
			return
		}
		if key != k || !bytes.Equal(m.Body, blob) {
			t.Fatalf("reference %q / body %q resolved to %q", key, body, m.Body)
		}
	})
}
