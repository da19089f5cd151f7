package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"maps"

	raw "google.golang.org/api/storage/v1"
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

// create writes body as object u.key on condition that no object has that
// name (ifGenerationMatch=0), retrying after a transient failure. It
// succeeds when this call wrote the object, and fails with GCS's 412
// when another writer did: the object carries this call's random token
// (MetaWrite), so a 412 answering a retry is told from another creator
// by reading the token back.
func (b objects) create(ctx context.Context, u upload, body []byte) error {
	token := randHex()
	u.metadata = maps.Clone(u.metadata)
	if u.metadata == nil {
		u.metadata = map[string]string{}
	}
	u.metadata[MetaWrite] = token
	u.onlyNew = true
	return b.retry.do(ctx, func(retried bool) error {
		_, err := b.insert(ctx, u, bytes.NewReader(body))
		if retried && conditionFailed(err) {
			if a, aerr := b.attrs(ctx, u.key, 0); aerr == nil && a.Metadata[MetaWrite] == token {
				return nil // the earlier attempt created it
			}
		}
		return err
	})
}

// rewrite copies generation gen of src (the live one when gen is 0) to
// dst server side, with metadata meta and content type mime, and returns
// the new object's attributes. A large object takes several calls. With
// fresh, dst is a new name only this call writes (a trash copy's): the
// copy is conditional on no object having it (ifGenerationMatch=0) and
// retried, and a 412 answering a retry is the earlier attempt's copy.
// Otherwise the copy replaces dst unconditionally and is sent once.
func (b objects) rewrite(ctx context.Context, src string, gen int64, dst string, meta map[string]string, mime string, fresh bool) (*attrs, error) {
	c := b.svc.Objects.Rewrite(b.bucket, src, b.bucket, dst, &raw.Object{Metadata: meta, ContentType: mime}).Context(ctx)
	if gen > 0 {
		c = c.SourceGeneration(gen)
	}
	if fresh {
		c = c.IfGenerationMatch(0)
	}
	token, retried := "", false
	for {
		var res *raw.RewriteResponse
		err := b.retryIf(ctx, fresh, func(again bool) error {
			retried = retried || again
			var err error
			res, err = c.RewriteToken(token).Do()
			return err
		})
		if fresh && retried && conditionFailed(err) {
			return b.attrs(ctx, dst, 0)
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
		if retried && notFound(err) {
			return nil
		}
		return err
	})
}
