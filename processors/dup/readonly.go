package dup

import (
	"context"
	"fmt"
	"io"

	"github.com/millfleet/mill/pkg/storage"
)

// ReadOnly is a view of a provider that can only be read. It is a
// storage.Provider (so storage.Copy and storage.Walk accept it) whose write
// methods fail with ErrReadOnly without reaching the wrapped provider.
//
// Unwrap exposes the wrapped provider only so that a destination's
// storage.ServerSideCopier can recognise it as a copy source (S3 CopyObject
// reads the source and writes the destination); storage.Copy never writes
// to the source it unwraps.
type ReadOnly struct{ p storage.Provider }

var (
	_ storage.Provider  = ReadOnly{}
	_ storage.Unwrapper = ReadOnly{}
)

// NewReadOnly returns a read-only view of p.
func NewReadOnly(p storage.Provider) ReadOnly { return ReadOnly{p: p} }

// Unwrap implements storage.Unwrapper (see the type's documentation).
func (r ReadOnly) Unwrap() storage.Provider { return r.p }

// Kind implements storage.Provider.
func (r ReadOnly) Kind() storage.Kind { return r.p.Kind() }

// ListSpaces implements storage.Provider.
func (r ReadOnly) ListSpaces(ctx context.Context) ([]string, error) { return r.p.ListSpaces(ctx) }

// SpaceACLs implements storage.Provider.
func (r ReadOnly) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	return r.p.SpaceACLs(ctx, space)
}

// ListContent implements storage.Provider.
func (r ReadOnly) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	return r.p.ListContent(ctx, space, after, limit)
}

// Head implements storage.Provider.
func (r ReadOnly) Head(ctx context.Context, space, contentID string) (*storage.Info, error) {
	return r.p.Head(ctx, space, contentID)
}

// Get implements storage.Provider.
func (r ReadOnly) Get(ctx context.Context, space, contentID string) (io.ReadCloser, *storage.Info, error) {
	return r.p.Get(ctx, space, contentID)
}

func refused(op, space string) error { return fmt.Errorf("%s %s: %w", op, space, ErrReadOnly) }

// CreateSpace fails with ErrReadOnly.
func (r ReadOnly) CreateSpace(_ context.Context, space string) error {
	return refused("create space", space)
}

// DeleteSpace fails with ErrReadOnly.
func (r ReadOnly) DeleteSpace(_ context.Context, space string) error {
	return refused("delete space", space)
}

// SetSpaceACLs fails with ErrReadOnly.
func (r ReadOnly) SetSpaceACLs(_ context.Context, space string, _ map[string]string) error {
	return refused("set ACLs of", space)
}

// Put fails with ErrReadOnly.
func (r ReadOnly) Put(_ context.Context, space, contentID string, _ io.Reader, _ storage.PutOptions) (*storage.Info, error) {
	return nil, refused("put", space+"/"+contentID)
}

// SetProperties fails with ErrReadOnly.
func (r ReadOnly) SetProperties(_ context.Context, space, contentID string, _ map[string]string) error {
	return refused("set properties of", space+"/"+contentID)
}

// Delete fails with ErrReadOnly.
func (r ReadOnly) Delete(_ context.Context, space, contentID string) error {
	return refused("delete", space+"/"+contentID)
}
