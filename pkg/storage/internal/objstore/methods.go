package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
)

// Recovery is what Methods needs of a provider to list and restore an
// item's trash copies, A being what the service reports of an object.
type Recovery[A any] struct {
	// List calls each with the name (after prefix) and attributes of every
	// object whose name starts with prefix.
	List func(ctx context.Context, prefix string, each func(name string, a *A)) error
	// Attrs reads an object's attributes.
	Attrs func(ctx context.Context, key string) (*A, error)
	// Preserve keeps the object at key, item id of space, recoverable
	// before it is deleted or replaced for reason (a Preserver); have is
	// its attributes when the caller read them (nil: read them).
	Preserve func(ctx context.Context, key, space, id string, have *A, reason string) (undo func(), err error)
	// Remove deletes the object at key, failing when its attributes are
	// no longer a (a conditional delete).
	Remove func(ctx context.Context, key string, a *A) error
	// Patch prepares replacing the properties of the object a describes
	// (its metadata, keeping its MD5 and CRC): it refuses properties the
	// service cannot store, else returns the write, which fails when the
	// object's attributes are no longer a.
	Patch func(a *A, props map[string]string) (write func(ctx context.Context, key string) error, err error)
	// Copy copies src, whose attributes are from, over dst server side,
	// with src's metadata and content type.
	Copy func(ctx context.Context, src, dst string, from *A) error
	// Sum is the object's MD5 as the service reports it, and its size.
	Sum func(a *A) (md5 []byte, size int64)
	// Info describes the object as item id.
	Info func(a *A, id string) *storage.Info
	// What the service calls an object, in errors ("blob").
	What string
}

// Provider is what an object-store provider hands Methods: its spaces
// (whose Layout and Wrap Methods use), the front of its Put (whose
// Layout Methods sets), its trash copies, its storage.RangeReader and its
// listing of names.
type Provider[A any] struct {
	Spaces   Spaces
	Put      Put
	Recovery Recovery[A]
	GetRange func(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *storage.Info, error)
	// ListNames calls each with the name of every object under prefix,
	// in byte-wise order, from start on ("": the first; a service may
	// list from before it), asking for about pageSize names a request,
	// until each returns false.
	ListNames func(ctx context.Context, prefix, start string, pageSize int, each func(name string) bool) error
}

// spaceMethods keeps the embedded field of Methods unexported.
type spaceMethods = SpaceMethods

// Methods are the storage.Provider methods every object-store provider
// has alike: the space methods, ListContent, Put, Head, Get, Delete,
// SetProperties, MaxContentIDLen and storage.Recoverer's Versions and
// Restore over trash copies. A provider embeds them under an unexported alias: only these methods become its
// own, nothing of Provider.
type Methods[A any] struct {
	spaceMethods
	p Provider[A]
}

// Methods returns the shared methods over p.
func (p Provider[A]) Methods() Methods[A] {
	p.Put.Layout = p.Spaces.Layout
	return Methods[A]{spaceMethods: p.Spaces.Methods(), p: p}
}

// MaxContentIDLen returns the longest content ID the store accepts in
// space: the service's name limit less the prefix, the space and a slash.
func (m Methods[A]) MaxContentIDLen(space string) int {
	return m.p.Spaces.Layout.MaxContentIDLen(space)
}

// ListContent returns up to limit content IDs of space after the marker,
// in byte-wise order (a Page of the names ListNames lists from the
// marker's on).
func (m Methods[A]) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	ids, more, err := m.listContent(ctx, space, after, limit)
	return ids, more, m.p.Spaces.Wrap("list", space, err)
}

func (m Methods[A]) listContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	if err := m.p.Spaces.Need(ctx, space); err != nil {
		return nil, false, err
	}
	l := m.p.Spaces.Layout
	page := NewPage(after, limit)
	prefix := l.SpacePrefix(space)
	start := ""
	if after != "" {
		start = prefix + l.encode(after) // the page skips the marker itself
	}
	full := false
	err := m.p.ListNames(ctx, prefix, start, page.Limit+1, func(name string) bool {
		id, ok := l.decode(strings.TrimPrefix(name, prefix))
		full = ok && page.Add(id)
		return !full
	})
	if err != nil {
		return nil, false, err
	}
	return page.IDs, full, nil
}

// Put writes the item (see the provider's package doc, Writes).
func (m Methods[A]) Put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	info, err := m.p.Put.Run(ctx, space, id, r, opts)
	return info, m.p.Spaces.Wrap("put", space+"/"+id, err)
}

// Head returns the item's Info (Recovery.Attrs and Info); when there is
// no item, the space's error if the space is missing (Spaces.ReadErr).
func (m Methods[A]) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	_, a, err := m.item(ctx, space, id)
	if err != nil {
		return nil, m.p.Spaces.Wrap("head", space+"/"+id, m.p.Spaces.ReadErr(ctx, space, err))
	}
	return m.p.Recovery.Info(a, id), nil
}

// Get streams the whole item.
func (m Methods[A]) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	// A rewrite between reading the attributes and opening the bytes
	// replaces the revision read: read the new one.
	return GetCurrent(func() (io.ReadCloser, *storage.Info, error) { return m.p.GetRange(ctx, space, id, 0, -1, "") })
}

// Versions implements storage.Recoverer: the item's trash copies, newest
// first.
func (m Methods[A]) Versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	vs, err := m.versions(ctx, space, id)
	return vs, m.p.Spaces.Wrap("versions", space+"/"+id, err)
}

func (m Methods[A]) versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	if _, err := m.p.Spaces.Layout.ContentKey(space, id); err != nil {
		return nil, err
	}
	prefix := m.p.Spaces.Layout.TrashItemPrefix(space, id)
	out := []storage.Version{}
	err := m.p.Recovery.List(ctx, prefix, func(name string, a *A) {
		v, ok := TrashVersion(strings.TrimPrefix(name, prefix))
		if !ok {
			return // not a copy the store made
		}
		v.Info = *m.p.Recovery.Info(a, id)
		out = append(out, v)
	})
	if err != nil {
		return nil, err
	}
	NewestFirst(out)
	return out, nil
}

// Restore implements storage.Recoverer: the version is copied (server
// side) back to the item's name, after what is there was kept recoverable
// in turn.
func (m Methods[A]) Restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	info, err := m.restore(ctx, space, id, versionID)
	return info, m.p.Spaces.Wrap("restore", space+"/"+id, err)
}

func (m Methods[A]) restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	r := m.p.Recovery
	key, src, err := m.p.Spaces.RestoreSource(ctx, space, id, versionID, func() ([]storage.Version, error) { return m.versions(ctx, space, id) })
	if err != nil {
		return nil, err
	}
	from, err := r.Attrs(ctx, src)
	if err != nil {
		return nil, err
	}
	undo, err := r.Preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	if err := r.Copy(ctx, src, key, from); err != nil {
		undo()
		return nil, err
	}
	a, err := r.Attrs(ctx, key)
	if err != nil {
		return nil, err
	}
	md5, size := r.Sum(a)
	fromMD5, fromSize := r.Sum(from)
	if size != fromSize || !bytes.Equal(md5, fromMD5) {
		return nil, fmt.Errorf("%w: restored %s has MD5 %x and %d bytes, the version %x and %d", storage.ErrChecksumMismatch, r.What, md5, size, fromMD5, fromSize)
	}
	return r.Info(a, id), nil
}

// Delete removes the item, keeping it recoverable (a trash copy); a
// missing item or space is success.
func (m Methods[A]) Delete(ctx context.Context, space, id string) error {
	return m.p.Spaces.Wrap("delete", space+"/"+id, m.delete(ctx, space, id))
}

// item returns the name of item id of space and its object's attributes.
func (m Methods[A]) item(ctx context.Context, space, id string) (string, *A, error) {
	key, err := m.p.Spaces.Layout.ContentKey(space, id)
	if err != nil {
		return "", nil, err
	}
	a, err := m.p.Recovery.Attrs(ctx, key)
	return key, a, err
}

func (m Methods[A]) delete(ctx context.Context, space, id string) error {
	r := m.p.Recovery
	key, a, err := m.item(ctx, space, id)
	if m.p.Spaces.NotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	undo, err := r.Preserve(ctx, key, space, id, a, storage.ReplacedByDelete)
	if err != nil {
		return err
	}
	if err := r.Remove(ctx, key, a); err != nil {
		undo()
		if m.p.Spaces.NotFound(err) {
			return nil
		}
		return err
	}
	return nil
}

// SetProperties replaces the item's properties (the bytes stay), keeping
// the state it replaces recoverable.
func (m Methods[A]) SetProperties(ctx context.Context, space, id string, props map[string]string) error {
	return m.p.Spaces.Wrap("set properties", space+"/"+id, m.setProperties(ctx, space, id, props))
}

func (m Methods[A]) setProperties(ctx context.Context, space, id string, props map[string]string) error {
	r := m.p.Recovery
	key, a, err := m.item(ctx, space, id)
	if m.p.Spaces.NotFound(err) {
		// The space is missing, or the item.
		if serr := m.p.Put.NeedSpace(ctx, space); serr != nil {
			return serr
		}
	}
	if err != nil {
		return err
	}
	write, err := r.Patch(a, props)
	if err != nil {
		return err
	}
	undo, err := r.Preserve(ctx, key, space, id, a, storage.ReplacedByProperties)
	if err != nil {
		return err
	}
	if err := write(ctx, key); err != nil {
		undo()
		return err
	}
	return nil
}
