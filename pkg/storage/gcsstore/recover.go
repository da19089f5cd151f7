package gcsstore

import (
	"context"
	"maps"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// preserve keeps the object at key recoverable before it is deleted or
// replaced for reason: a server-side copy of that generation under the
// trash prefix with its metadata (objstore.Preserver). a is the object's
// attributes when the caller has them, else they are read.
func (s *Store) preserve(ctx context.Context, key, space, id string, a *attrs, reason string) (undo func(), err error) {
	_, undo, err = s.preserveGen(ctx, key, space, id, a, reason)
	return undo, err
}

// preserveGen is preserve, also returning the generation kept (0: there
// was no object).
func (s *Store) preserveGen(ctx context.Context, key, space, id string, a *attrs, reason string) (gen int64, undo func(), err error) {
	var copied int64 // the generation of the copy undo removes
	undo, err = objstore.Preserver[attrs]{
		Read: func(ctx context.Context, key string) (*attrs, error) {
			return s.bucket.attrs(ctx, key, 0)
		},
		Missing: s.spaces.NotFound,
		Copy: func(ctx context.Context, a *attrs, key, tkey string) error {
			// tkey is a fresh name: the copy is conditional on it being
			// new, and retried.
			none := int64(0)
			c, err := s.bucket.rewrite(ctx, key, a.Generation, copyTo{key: tkey, meta: maps.Clone(a.Metadata), mime: a.ContentType, ifGen: &none})
			if err == nil {
				gen, copied = a.Generation, c.Generation
			}
			return err
		},
		Stale:  s.spaces.NotFound, // the generation copied is gone
		Forget: func(ctx context.Context, tkey string) { s.deleteKey(ctx, tkey, copied) },
		What:   "object",
	}.Preserve(ctx, key, s.layout.TrashItemPrefix(space, id), reason, a)
	return gen, undo, err
}

// recovery lists the trash copies (storage.Recoverer, by
// objstore.Methods) and copies one back with its metadata (a rewrite).
func (s *Store) recovery() objstore.Recovery[attrs] {
	return objstore.Recovery[attrs]{
		List: s.listAttrs,
		Attrs: func(ctx context.Context, key string) (*attrs, error) {
			return s.bucket.attrs(ctx, key, 0)
		},
		Preserve: s.preserve,
		// A metadata patch: the bytes and generation stay, the modified
		// time becomes now.
		Patch: func(a *attrs, props map[string]string) (func(context.Context, string) error, error) {
			meta, err := metaNames.Build(a.Metadata[MetaMD5], a.Metadata[MetaCRC64], props)
			return func(ctx context.Context, key string) error {
				// Only the generation and metadata read: a concurrent
				// rewrite or patch fails the patch.
				return s.bucket.patchMetadata(ctx, key, a.Generation, a.Metageneration, meta)
			}, err
		},
		Remove: func(ctx context.Context, key string, a *attrs) error {
			return s.bucket.delete(ctx, key, a.Generation)
		},
		Copy: func(ctx context.Context, src, dst string, from *attrs) error {
			_, err := s.copyObject(ctx, src, dst, maps.Clone(from.Metadata), from.ContentType)
			return err
		},
		Sum:  func(a *attrs) ([]byte, int64) { return a.MD5, a.Size },
		Info: func(a *attrs, id string) *storage.Info { return infoOf(a, id) },
		What: "object",
	}
}

// listAttrs calls each with the name and attributes of every object
// under prefix.
func (s *Store) listAttrs(ctx context.Context, prefix string, each func(name string, a *attrs)) error {
	return s.bucket.list(ctx, listing{prefix: prefix}, func(a *attrs) (bool, error) {
		each(a.Name, a)
		return true, nil
	})
}
