package gcsstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// trashItemPrefix is the name prefix of one item's trash copies.
func (s *Store) trashItemPrefix(space, id string) string {
	return s.layout.TrashItemPrefix(space, id)
}

// trashName names a trash copy: when it was made, random hex, and why.
func trashName(now time.Time, reason string) string {
	return objstore.TrashName(now, randHex(), reason)
}

// preserve keeps the object at key recoverable before it is deleted or
// replaced for reason: a server-side copy under the trash prefix with its
// metadata. a is the object's attributes when the caller has them, else
// they are read (a missing object — a first write — is not copied). undo
// removes the copy when the replacement then fails.
func (s *Store) preserve(ctx context.Context, key, space, id string, a *gcs.ObjectAttrs, reason string) (undo func(), err error) {
	undo = func() {}
	// A concurrent writer may replace the generation read before it is
	// copied (then that writer kept it): keep what is current instead.
	for try := 0; ; try++ {
		if a == nil {
			a, err = s.bucket.Object(key).Attrs(ctx)
			if errors.Is(mapErr(err), storage.ErrNotFound) {
				return undo, nil
			}
			if err != nil {
				return undo, err
			}
		}
		tkey := s.trashItemPrefix(space, id) + trashName(time.Now(), reason)
		c := s.bucket.Object(tkey).CopierFrom(s.bucket.Object(key).Generation(a.Generation))
		c.Metadata = maps.Clone(a.Metadata)
		c.ContentType = a.ContentType
		_, err := c.Run(ctx)
		if err == nil {
			return func() { s.deleteKey(ctx, tkey) }, nil
		}
		if try == 19 || !errors.Is(mapErr(err), storage.ErrNotFound) {
			return undo, fmt.Errorf("keep the replaced object recoverable under %s: %w", TrashPrefix, err)
		}
		a = nil
	}
}

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
