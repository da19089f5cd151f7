package claimcheck_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

func bigBody(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz ✓\n"), n/40+1)
	return b[:n]
}

func setup(t *testing.T) (*claimcheck.Queue, *memqueue.Queue, *memblob.Store) {
	t.Helper()
	inner := memqueue.New("cc", memqueue.Config{Clock: clock.NewFake(time.Time{})})
	blobs := memblob.New(nil)
	return claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/"}), inner, blobs
}

// A claim-checked body round-trips; deleting its message leaves the blob
// to the claims expiry (see Queue.Delete).
func TestRoundTripAndDeleteKeepsBlob(t *testing.T) {
	q, inner, blobs := setup(t)
	ctx := context.Background()
	big := bigBody(1 << 20)
	small := []byte("small")
	err := q.Send(ctx, queue.SendEntry{Body: big, Attributes: map[string]string{"k": "v"}}, queue.SendEntry{Body: small})
	if err != nil {
		t.Fatal(err)
	}
	if blobs.Len() != 1 {
		t.Fatalf("%d blobs, want 1", blobs.Len())
	}
	for _, m := range inner.Messages() {
		if len(m.Body) > claimcheck.DefaultThreshold {
			t.Fatalf("inner queue holds a %d-byte body", len(m.Body))
		}
		if string(m.Body) != "small" && (!strings.Contains(string(m.Body), `"millClaimCheck"`) || !strings.HasPrefix(m.Attributes[claimcheck.AttrRef], "claims/")) {
			t.Fatalf("reference message: %q %v", m.Body, m.Attributes)
		}
	}
	ms, err := q.Receive(ctx, 10, 0)
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %v, %d", err, len(ms))
	}
	for _, m := range ms {
		if claimcheck.Unresolved(m) != nil {
			t.Fatal(claimcheck.Unresolved(m))
		}
		if !bytes.Equal(m.Body, big) && !bytes.Equal(m.Body, small) {
			t.Fatalf("received %d bytes, not a sent body", len(m.Body))
		}
		if bytes.Equal(m.Body, big) && m.Attributes["k"] != "v" {
			t.Fatalf("attributes lost: %v", m.Attributes)
		}
	}
	if err := q.Delete(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	if blobs.Len() != 1 || inner.Len() != 0 {
		t.Fatalf("after delete: %d blobs, %d messages; want 1, 0", blobs.Len(), inner.Len())
	}
}

func TestMissingBlobIsMarked(t *testing.T) {
	q, _, blobs := setup(t)
	ctx := context.Background()
	if err := q.Send(ctx, queue.SendEntry{Body: bigBody(300 << 10)}); err != nil {
		t.Fatal(err)
	}
	ms, _ := q.Receive(ctx, 1, 0)
	_ = blobs.Delete(ctx, ms[0].Attributes[claimcheck.AttrRef])
	if err := q.Release(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	ms, err := q.Receive(ctx, 1, 0)
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v %d", err, len(ms))
	}
	if err := claimcheck.Unresolved(ms[0]); !errors.Is(err, claimcheck.ErrBlobNotFound) {
		t.Fatalf("Unresolved = %v, want ErrBlobNotFound", err)
	}
	if !strings.Contains(string(ms[0].Body), `"millClaimCheck"`) {
		t.Fatalf("unresolved body should be the reference, got %.80q", ms[0].Body)
	}
	if err := q.Delete(ctx, ms...); err != nil {
		t.Fatalf("delete of an unresolved message: %v", err)
	}
}

func TestFailedSendRemovesBlob(t *testing.T) {
	inner := memqueue.New("cc", memqueue.Config{Fault: func(op string, i int) error {
		if op == memqueue.OpSend && i == 1 {
			return errors.New("injected")
		}
		return nil
	}})
	blobs := memblob.New(nil)
	q := claimcheck.New(inner, blobs, claimcheck.Config{Threshold: 10})
	err := q.Send(context.Background(), queue.SendEntry{Body: []byte("short")}, queue.SendEntry{Body: bigBody(100)}, queue.SendEntry{Body: bigBody(50)})
	if got := queue.FailedIndexes(err, 3); len(got) != 1 || got[0] != 1 {
		t.Fatalf("send: %v", err)
	}
	if blobs.Len() != 1 || inner.Len() != 2 {
		t.Fatalf("%d blobs (want 1), %d messages (want 2)", blobs.Len(), inner.Len())
	}
}

// failingGet is a blob store whose reads fail, as S3 does in an outage.
type failingGet struct{ *memblob.Store }

func (failingGet) Get(context.Context, string) ([]byte, error) {
	return nil, errors.New("dial tcp: connection refused")
}

func TestUnreadableBlobIsUnavailableNotMissing(t *testing.T) {
	ctx := context.Background()
	inner := memqueue.New("cc", memqueue.Config{})
	blobs := memblob.New(nil)
	if err := claimcheck.New(inner, blobs, claimcheck.Config{}).Send(ctx, queue.SendEntry{Body: bigBody(300 << 10)}); err != nil {
		t.Fatal(err)
	}
	ms, err := claimcheck.New(inner, failingGet{blobs}, claimcheck.Config{}).Receive(ctx, 1, 0)
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v %d", err, len(ms))
	}
	err = claimcheck.Unresolved(ms[0])
	if !errors.Is(err, claimcheck.ErrBlobUnavailable) || errors.Is(err, claimcheck.ErrBlobNotFound) || errors.Is(err, claimcheck.ErrUnresolved) {
		t.Fatalf("Unresolved = %v, want only ErrBlobUnavailable", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Unresolved = %v, want the cause named", err)
	}
	if blobs.Len() != 1 {
		t.Errorf("the blob must survive a failed read: %d blobs", blobs.Len())
	}
}
