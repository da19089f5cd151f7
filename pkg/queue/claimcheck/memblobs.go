package claimcheck

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// MemBlobs is an in-memory Blobs for tests and the embedded dev mode.
type MemBlobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ Blobs = (*MemBlobs)(nil)

// NewMemBlobs returns an empty store.
func NewMemBlobs() *MemBlobs { return &MemBlobs{m: map[string][]byte{}} }

// Put stores a copy of data under key.
func (b *MemBlobs) Put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[key] = bytes.Clone(data)
	return nil
}

// Get returns a copy of the blob under key.
func (b *MemBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.m[key]
	if !ok {
		return nil, fmt.Errorf("%q: %w", key, ErrBlobNotFound)
	}
	return bytes.Clone(d), nil
}

// Delete removes key (a missing key is fine).
func (b *MemBlobs) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
	return nil
}

// Len returns the number of stored blobs.
func (b *MemBlobs) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// Keys returns the stored keys, sorted.
func (b *MemBlobs) Keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.m))
}
