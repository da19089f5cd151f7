package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"maps"

	raw "google.golang.org/api/storage/v1"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// MetaWrite is the custom-metadata key of the random token a space
// marker's creation carries, by which a retried creation refused by its
// precondition recognizes its own earlier attempt.
const MetaWrite = "mill-write"

// The writes of this file are conditionally idempotent (the package doc,
// Retries): each is tried again after a transient failure (backoff.do),
// and a refusal that follows such a failure is checked against what the
// earlier attempt would have left.

// retryIf runs call with the store's retries when ok (a conditionally
// idempotent request), else once.
func (b objects) retryIf(ctx context.Context, ok bool, call func(retried bool) error) error {
	if !ok {
		return call(false)
	}
	return b.retry.do(ctx, call)
}

// insertIf writes body as object u.key on condition that the live
// generation is gen (0: that there is none), retrying after a transient
// failure, and returns the object's attributes. A 412 answering a retry
// is success when mine accepts the object now there as what the earlier
// attempt wrote; otherwise it is GCS's 412: another writer came first.
func (b objects) insertIf(ctx context.Context, u upload, body []byte, gen int64, mine func(*attrs) bool) (*attrs, error) {
	u.ifGen = condition(gen)
	var out *attrs
	err := b.retryIf(ctx, u.ifGen != nil, func(retried bool) error {
		a, err := b.insert(ctx, u, bytes.NewReader(body))
		if retried && conditionFailed(err) {
			if now, aerr := b.attrs(ctx, u.key, 0); aerr == nil && mine(now) {
				a, err = now, nil
			}
		}
		out = a
		return err
	})
	return out, err
}

// tokened returns u carrying a new random token (MetaWrite) and the test
// that an object is the one written with it.
func tokened(u upload) (upload, func(*attrs) bool) {
	token := objstore.RandHex()
	u.metadata = maps.Clone(u.metadata)
	if u.metadata == nil {
		u.metadata = map[string]string{}
	}
	u.metadata[MetaWrite] = token
	return u, func(a *attrs) bool { return a.Metadata[MetaWrite] == token }
}

// create writes body as a new object u.key (no object has the name),
// retrying after a transient failure. It fails with GCS's 412 when
// another writer created the object: the object carries this call's
// random token (MetaWrite), by which a 412 answering a retry is told
// from another creator.
func (b objects) create(ctx context.Context, u upload, body []byte) error {
	u, mine := tokened(u)
	_, err := b.insertIf(ctx, u, body, 0, mine)
	return err
}

// replace writes body over the live object u.key, whatever its
// generation (last writer wins), yet only ever sending conditional,
// retried writes (insertIf, with a token): the write is conditional on
// the generation read, and read again when another writer came first,
// up to 10 times. A missing object is ErrNotFound (a deleted marker is
// not written again).
func (b objects) replace(ctx context.Context, u upload, body []byte) error {
	u, mine := tokened(u)
	for try := 0; ; try++ {
		a, err := b.attrs(ctx, u.key, 0)
		if err != nil {
			return err
		}
		_, err = b.insertIf(ctx, u, body, a.Generation, mine)
		if !conditionFailed(err) || try == 9 {
			return err
		}
	}
}

// deleteLive removes the live object key, whatever its generation, only
// ever sending conditional, retried deletes: of the generation read, read
// again when another writer replaced it first, up to 10 times.
func (b objects) deleteLive(ctx context.Context, key string) error {
	for try := 0; ; try++ {
		a, err := b.attrs(ctx, key, 0)
		if err != nil {
			return err
		}
		err = b.delete(ctx, key, a.Generation)
		if !conditionFailed(err) || try == 9 {
			return err
		}
	}
}

// copyTo is the destination of a server-side copy (objects.rewrite).
type copyTo struct {
	key  string
	meta map[string]string
	mime string
	// ifGen, when set, makes the copy conditional on the live generation
	// of key (0: none) and retried; a 412 answering a retry is success
	// when mine accepts the object now there (nil: any object, for a
	// fresh name only this call writes).
	ifGen *int64
	mine  func(*attrs) bool
}

// rewrite copies generation gen of src (the live one when gen is 0) to
// dst server side and returns the new object's attributes. A large object
// takes several calls. Without dst.ifGen the copy replaces dst
// unconditionally and is sent once.
func (b objects) rewrite(ctx context.Context, src string, gen int64, dst copyTo) (*attrs, error) {
	c := b.svc.Objects.Rewrite(b.bucket, src, b.bucket, dst.key, &raw.Object{Metadata: dst.meta, ContentType: dst.mime}).Context(ctx)
	if gen > 0 {
		c = c.SourceGeneration(gen)
	}
	if dst.ifGen != nil {
		c = c.IfGenerationMatch(*dst.ifGen)
	}
	token, retried := "", false
	for {
		var res *raw.RewriteResponse
		err := b.retryIf(ctx, dst.ifGen != nil, func(again bool) error {
			retried = retried || again
			var err error
			res, err = c.RewriteToken(token).Do()
			return err
		})
		if retried && conditionFailed(err) {
			if a, aerr := b.attrs(ctx, dst.key, 0); aerr == nil && (dst.mine == nil || dst.mine(a)) {
				return a, nil // the earlier attempt's copy
			}
		}
		if err != nil {
			return nil, err
		}
		if res.Done {
			return attrsOf(res.Resource)
		}
		if res.RewriteToken == "" {
			return nil, errors.New("gcsstore: rewrite not done and no token to continue it")
		}
		token = res.RewriteToken
	}
}

// patchMetadata sets the custom metadata of generation gen of key (the
// keys of meta; the others stay), failing when gen is no longer the live
// one. With metagen > 0 it is also conditional on the metadata being
// those of metagen (ifMetagenerationMatch) and retried; a 412 answering a
// retry is success when the live generation is gen and holds meta.
func (b objects) patchMetadata(ctx context.Context, key string, gen, metagen int64, meta map[string]string) error {
	o := &raw.Object{Metadata: meta}
	if len(meta) == 0 {
		o.NullFields = []string{"Metadata"} // an empty map would be no change
	}
	c := b.svc.Objects.Patch(b.bucket, key, o).IfGenerationMatch(gen).Context(ctx)
	if metagen > 0 {
		c = c.IfMetagenerationMatch(metagen)
	}
	return b.retryIf(ctx, metagen > 0, func(retried bool) error {
		_, err := c.Do()
		if retried && conditionFailed(err) {
			if a, aerr := b.attrs(ctx, key, 0); aerr == nil && a.Generation == gen && holds(a.Metadata, meta) {
				return nil // the earlier attempt patched it
			}
		}
		return err
	})
}

// holds reports whether metadata has every entry of meta (none at all
// when meta is empty: a patch clearing the metadata).
func holds(metadata, meta map[string]string) bool {
	if len(meta) == 0 {
		return len(metadata) == 0
	}
	for k, v := range meta {
		if got, ok := metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// delete removes object key. With gen > 0 only that generation
// (ifGenerationMatch), retried, and a 404 answering a retry is success:
// generation gen is gone, as asked. With gen 0 the delete is
// unconditional and sent once.
func (b objects) delete(ctx context.Context, key string, gen int64) error {
	c := b.svc.Objects.Delete(b.bucket, key).Context(ctx)
	if gen > 0 {
		c = c.IfGenerationMatch(gen)
	}
	return b.retryIf(ctx, gen > 0, func(retried bool) error {
		err := c.Do()
		if retried && errors.Is(mapErr(err), storage.ErrNotFound) {
			return nil
		}
		return err
	})
}
