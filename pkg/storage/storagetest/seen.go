package storagetest

import (
	"bytes"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// testSeen holds a provider that takes what a copy's caller read
// (storage.SeenCopier, PutOptions.Replaces) to the precondition it
// promises: an Info it was given is used only while it is still true, so
// reading less never lets a concurrent change through.
func testSeen(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	if _, ok := p.(storage.SeenCopier); !ok {
		t.Skip("provider does not take what the caller read (storage.SeenCopier)")
	}
	mustCreate(t, p, "src")
	mustCreate(t, p, "dst")
	v1, v2 := []byte("source as it was read"), []byte("source rewritten since")
	mustPut(t, p, "src", "a", v1, storage.PutOptions{})
	read, err := p.Head(ctx, "src", "a")
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, p, "src", "a", v2, storage.PutOptions{})
	_, err = storage.CopyWith(ctx, p, "src", "a", p, "dst", storage.CopyOptions{Source: read, DestRead: true})
	// Reported even where the endpoint ignored the precondition.
	wantErr(t, "Copy(source rewritten since it was read)", err, storage.ErrChanged)
	if !h.CopyConditionsIgnored {
		wantNotFound(t, p, "dst", "a")
	} else if err := p.Delete(ctx, "dst", "a"); err != nil {
		t.Fatal(err)
	}

	// Read as absent, written since: never overwritten unseen, whether
	// the copy is server-side or streamed (Put).
	cur, err := p.Head(ctx, "src", "a")
	if err != nil {
		t.Fatal(err)
	}
	theirs := []byte("written at the destination since it was read")
	mustPut(t, p, "dst", "a", theirs, storage.PutOptions{})
	if !h.CopyConditionsIgnored {
		_, err = storage.CopyWith(ctx, p, "src", "a", p, "dst", storage.CopyOptions{Source: cur, DestRead: true})
		wantErr(t, "Copy(destination read as absent, written since)", err, storage.ErrChanged)
		wantContent(t, p, "dst", "a", theirs)
	}
	_, err = p.Put(ctx, "dst", "a", bytes.NewReader(v2), storage.PutOptions{Size: int64(len(v2)), ReplacesRead: true})
	wantErr(t, "Put(item read as absent, written since)", err, storage.ErrChanged)
	wantContent(t, p, "dst", "a", theirs)

	// What was read, still true: the copy goes ahead.
	dst, err := p.Head(ctx, "dst", "a")
	if err != nil {
		t.Fatal(err)
	}
	info, err := storage.CopyWith(ctx, p, "src", "a", p, "dst", storage.CopyOptions{Source: cur, Dest: dst, DestRead: true})
	if err != nil {
		t.Fatalf("Copy(both as read): %v", err)
	}
	if info.Checksum != md5hex(v2) || info.Size != int64(len(v2)) {
		t.Errorf("Copy(both as read): Info %s %d bytes, want %s %d", info.Checksum, info.Size, md5hex(v2), len(v2))
	}
	wantContent(t, p, "dst", "a", v2)
	mustPut(t, p, "src", "new", v1, storage.PutOptions{})
	if _, err := p.Put(ctx, "dst", "new", bytes.NewReader(v1), storage.PutOptions{Size: int64(len(v1)), ReplacesRead: true}); err != nil {
		t.Fatalf("Put(item read as absent, still absent): %v", err)
	}
	wantContent(t, p, "dst", "new", v1)
}
