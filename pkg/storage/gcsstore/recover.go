package gcsstore

import (
	"context"
	"errors"
	"maps"

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

// recovery lists the trash copies (storage.Recoverer, by
// objstore.Methods) and copies one back with its metadata (a rewrite).
func (s *Store) recovery() objstore.Recovery[gcs.ObjectAttrs] {
	return objstore.Recovery[gcs.ObjectAttrs]{
		List: s.listAttrs,
		Attrs: func(ctx context.Context, key string) (*gcs.ObjectAttrs, error) {
			return s.bucket.Object(key).Attrs(ctx)
		},
		Preserve: s.preserve,
		// A metadata patch: the bytes and generation stay, the modified
		// time becomes now.
		Patch: func(a *gcs.ObjectAttrs, props map[string]string) (func(context.Context, string) error, error) {
			meta, err := metadata(a.Metadata[MetaMD5], a.Metadata[MetaCRC64], props)
			return func(ctx context.Context, key string) error {
				// Only the generation read: a concurrent rewrite fails the patch.
				_, err := s.bucket.Object(key).If(gcs.Conditions{GenerationMatch: a.Generation}).Update(ctx, gcs.ObjectAttrsToUpdate{Metadata: meta})
				return err
			}, err
		},
		Remove: func(ctx context.Context, key string, a *gcs.ObjectAttrs) error {
			return s.bucket.Object(key).If(gcs.Conditions{GenerationMatch: a.Generation}).Delete(ctx)
		},
		Copy: func(ctx context.Context, src, dst string, from *gcs.ObjectAttrs) error {
			_, err := s.copyObject(ctx, src, dst, maps.Clone(from.Metadata), from.ContentType)
			return err
		},
		Sum:  func(a *gcs.ObjectAttrs) ([]byte, int64) { return a.MD5, a.Size },
		Info: func(a *gcs.ObjectAttrs, id string) *storage.Info { return infoOf(a, id) },
		What: "object",
	}
}

// listAttrs calls each with the name and attributes of every object
// under prefix.
func (s *Store) listAttrs(ctx context.Context, prefix string, each func(name string, a *gcs.ObjectAttrs)) error {
	it := s.bucket.Objects(ctx, &gcs.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return err
		}
		each(a.Name, a)
	}
}
