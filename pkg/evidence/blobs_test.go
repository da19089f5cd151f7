package evidence

import (
	"context"
	"errors"
	"testing"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/memblob"
)

// TestGetBlobBound: a log refuses a blob over MaxBlob even from a store
// made without that bound, and reads one of MaxBlob bytes.
func TestGetBlobBound(t *testing.T) {
	ctx := context.Background()
	b := memblob.New(nil)
	for k, n := range map[string]int{"at": MaxBlob, "over": MaxBlob + 1} {
		if err := b.Put(ctx, k, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := getBlob(ctx, b, "at"); err != nil || len(got) != MaxBlob {
		t.Fatalf("a blob of MaxBlob bytes: %d, %v", len(got), err)
	}
	if got, err := getBlob(ctx, b, "over"); !errors.Is(err, blob.ErrTooLarge) || got != nil {
		t.Fatalf("a blob over MaxBlob: %d bytes, %v; want ErrTooLarge", len(got), err)
	}
	if _, err := getBlob(ctx, b, "none"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a missing blob: %v, want ErrNotFound", err)
	}
}
