// Package memblob is a blob.Store in memory, for tests and the embedded
// dev mode. It keeps copies of what it is given and hands out copies.
package memblob

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/millfleet/mill/pkg/blob"
)

// Store is a blob.Store in a map.
type Store struct {
	max int64
	mu  sync.Mutex
	m   map[string][]byte
}

var _ blob.Store = (*Store)(nil)

// New returns an empty store made with o (nil: no size bound).
func New(o *blob.Options) *Store { return &Store{max: o.Max(), m: map[string][]byte{}} }

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := check(ctx, key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[key]
	switch {
	case !ok:
		return nil, fmt.Errorf("memblob: %q: %w", key, blob.ErrNotFound)
	case s.max > 0 && int64(len(d)) > s.max:
		return nil, fmt.Errorf("memblob: %q: %w: over %d bytes", key, blob.ErrTooLarge, s.max)
	}
	return bytes.Clone(d), nil
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = bytes.Clone(data)
	return nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := blob.CheckKeys(keys); err != nil {
		return fmt.Errorf("memblob: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.m, k)
	}
	return nil
}

// List implements blob.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := blob.CheckKey(key); err != nil {
		return fmt.Errorf("memblob: %w", err)
	}
	return nil
}

// Len returns the number of blobs stored.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
