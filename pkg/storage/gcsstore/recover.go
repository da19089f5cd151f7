package gcsstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// trashItemPrefix is the name prefix of one item's trash copies.
func (s *Store) trashItemPrefix(space, id string) string {
	return s.layout.TrashItemPrefix(space, id)
}

// preserve keeps the object at key recoverable before it is deleted or
// replaced for reason: a server-side copy of that generation under the
// trash prefix with its metadata (objstore.Preserver). a is the object's
// attributes when the caller has them, else they are read.
func (s *Store) preserve(ctx context.Context, key, space, id string, a *gcs.ObjectAttrs, reason string) (undo func(), err error) {
	return objstore.Preserver[gcs.ObjectAttrs]{
		Read: func(ctx context.Context, key string) (*gcs.ObjectAttrs, error) {
			return s.bucket.Object(key).Attrs(ctx)
		},
		Missing: notFound,
		Copy: func(ctx context.Context, a *gcs.ObjectAttrs, key, tkey string) error {
			c := s.bucket.Object(tkey).CopierFrom(s.bucket.Object(key).Generation(a.Generation))
			c.Metadata = maps.Clone(a.Metadata)
			c.ContentType = a.ContentType
			_, err := c.Run(ctx)
			return err
		},
		Stale:  notFound, // the generation copied is gone
		Forget: s.deleteKey,
		What:   "object",
	}.Preserve(ctx, key, s.trashItemPrefix(space, id), reason, a)
}

func notFound(err error) bool { return errors.Is(mapErr(err), storage.ErrNotFound) }

// Versions implements storage.Recoverer: the item's trash copies, newest
// first.
func (s *Store) Versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	vs, err := s.versions(ctx, space, id)
	return vs, wrap("versions", space+"/"+id, err)
}

func (s *Store) versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	if _, err := s.contentKey(space, id); err != nil {
		return nil, err
	}
	prefix := s.trashItemPrefix(space, id)
	out := []storage.Version{}
	it := s.bucket.Objects(ctx, &gcs.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(a.Name, prefix)
		v, ok := objstore.TrashVersion(name)
		if !ok {
			continue // not a copy the store made
		}
		v.Info = *infoOf(a, id)
		out = append(out, v)
	}
	objstore.NewestFirst(out)
	return out, nil
}

// Restore implements storage.Recoverer: the version is copied (server
// side) back to the item's name, after what is there was kept recoverable
// in turn.
func (s *Store) Restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	info, err := s.restore(ctx, space, id, versionID)
	return info, wrap("restore", space+"/"+id, err)
}

func (s *Store) restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	key, src, err := s.spaces.RestoreSource(ctx, space, id, versionID, func() ([]storage.Version, error) { return s.versions(ctx, space, id) })
	if err != nil {
		return nil, err
	}
	from, err := s.bucket.Object(src).Attrs(ctx)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	a, err := s.copyObject(ctx, src, key, maps.Clone(from.Metadata), from.ContentType)
	if err != nil {
		undo()
		return nil, err
	}
	if hex.EncodeToString(a.MD5) != hex.EncodeToString(from.MD5) || a.Size != from.Size {
		return nil, fmt.Errorf("%w: restored object has MD5 %x and %d bytes, the version %x and %d", storage.ErrChecksumMismatch, a.MD5, a.Size, from.MD5, from.Size)
	}
	return infoOf(a, id), nil
}
