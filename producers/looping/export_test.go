package looping

import (
	"context"
	"errors"
	"math"

	"github.com/millfleet/mill/pkg/blob"
)

// Hooks for the external tests (looping_test) into the stores' journal.

func journalOf(s StateStore) *journal {
	switch v := s.(type) {
	case *FileStore:
		return v.journal
	case *S3Store:
		return v.journal
	case *MemoryStore:
		return v.journal
	case *journal:
		return v
	}
	return nil
}

// SetMaxEntries sets the journal's entry limit, whatever the base's size,
// until the returned func is called.
func SetMaxEntries(n int) (restore func()) {
	old, oldFloor := maxEntries, entryFloor
	maxEntries, entryFloor = n, math.MaxInt
	return func() { maxEntries, entryFloor = old, oldFloor }
}

// Written returns the bytes and blobs s's saves wrote.
func Written(s StateStore) (bytes, blobs int64) {
	j := journalOf(s)
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.written, j.blobsWritten
}

// WriteBase writes b where s keeps its base (an old-format state, a
// corrupt one).
func WriteBase(ctx context.Context, s StateStore, b []byte) error {
	j := journalOf(s)
	return j.b.Put(ctx, j.name, b)
}

// WriteEntry writes b as entry seq of generation gen of s's journal.
func WriteEntry(ctx context.Context, s StateStore, gen int64, seq int, b []byte) error {
	j := journalOf(s)
	return j.b.Put(ctx, j.entryName(gen, seq), b)
}

// JournalEntries lists the blobs of s's journal.
func JournalEntries(ctx context.Context, s StateStore) ([]string, error) {
	j := journalOf(s)
	return j.b.List(ctx, j.prefix())
}

// Reopen returns a new store on what s keeps (another process's view).
func Reopen(s StateStore) StateStore {
	j := journalOf(s)
	n := &journal{b: j.b, name: j.name, desc: j.desc}
	if m, ok := s.(*MemoryStore); ok {
		return &MemoryStore{journal: n, blobs: m.blobs}
	}
	return n
}

// FailPuts makes s's next n blob writes fail after writing (as a timeout
// whose request went through would).
func FailPuts(s StateStore, n int) {
	j := journalOf(s)
	j.b = &failingBlobs{Store: j.b, n: n}
}

type failingBlobs struct {
	blob.Store
	n int
}

func (f *failingBlobs) Put(ctx context.Context, name string, b []byte) error {
	if err := f.Store.Put(ctx, name, b); err != nil {
		return err
	}
	if f.n > 0 {
		f.n--
		return errors.New("injected: no answer to the write")
	}
	return nil
}
