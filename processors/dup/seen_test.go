package dup_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/dup"
)

// writtenAfterHead is a destination where another writer puts the item
// just after the processor's first HEAD of it found nothing: the write
// lands between the comparison and the copy.
type writtenAfterHead struct {
	storage.Provider
	t    *testing.T
	once sync.Once
}

func (w *writtenAfterHead) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	info, err := w.Provider.Head(ctx, space, id)
	w.once.Do(func() {
		if errors.Is(err, storage.ErrNotFound) {
			put(w.t, w.Provider, id, "written by another writer meanwhile", nil)
		}
	})
	return info, err
}

// TestCopyReusesTheComparedHeadsUnderPrecondition: the copy does not read
// the destination again (a request per need), yet an item written there
// after the processor read it as absent is not overwritten unseen: the
// write is conditional (If-None-Match) and fails with storage.ErrChanged,
// a transient error, so the task's retry compares afresh. Before, the
// streamed copy wrote over it (without a trash copy of what it replaced).
func TestCopyReusesTheComparedHeadsUnderPrecondition(t *testing.T) {
	_, _, src, dst := s3Pair(t)
	e := setup(t, func(storage.Provider) storage.Provider { return src },
		func(storage.Provider) storage.Provider { return &writtenAfterHead{Provider: dst, t: t} },
		func(c *dup.Config) { c.DisableServerSideCopy = true })
	put(t, src, "item", "the source's bytes", nil)
	a, err := run(t, e, dupTask("item"))
	if !errors.Is(err, storage.ErrChanged) || processors.IsPermanent(err) || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("DUP over an item written since it was read: %v, %v; want a transient ErrChanged", a, err)
	}
	if body, _ := read(t, dst, "item"); body != "written by another writer meanwhile" {
		t.Fatalf("destination after the DUP: %q; the other writer's item was overwritten unseen", body)
	}
	// The retry compares afresh and copies over it (recoverably).
	if a, err := run(t, e, dupTask("item")); err != nil || a != dup.CopyContent {
		t.Fatalf("retry: %v, %v; want a copy", a, err)
	}
	if body, _ := read(t, dst, "item"); body != "the source's bytes" {
		t.Fatalf("destination after the retry: %q", body)
	}
}
