package gcsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/pkg/storage"
)

// spaceRecord is the body of a space marker.
type spaceRecord struct {
	ACLs map[string]string `json:"acls"`
}

// ListSpaces returns the spaces (marker objects) in byte-wise order.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	out := []string{}
	it := s.bucket.Objects(ctx, &gcs.Query{Prefix: s.cfg.Prefix, Delimiter: "/"})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, wrap("list spaces", s.cfg.Prefix, err)
		}
		if a.Name == "" { // a prefix ("directory")
			continue
		}
		name := a.Name[len(s.cfg.Prefix):]
		if storage.ValidateSpaceID(name) == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

func (s *Store) readSpace(ctx context.Context, space string) (*spaceRecord, error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return nil, err
	}
	r, err := s.bucket.Object(key).NewReader(ctx)
	if err != nil {
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
		}
		return nil, err
	}
	defer r.Close()
	var rec spaceRecord
	if err := json.NewDecoder(io.LimitReader(r, 10<<20)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("space marker %s: %w", key, err)
	}
	if rec.ACLs == nil {
		rec.ACLs = map[string]string{}
	}
	return &rec, nil
}

// writeMarker writes a space marker; onlyNew makes it conditional on the
// marker not existing (ifGenerationMatch=0).
func (s *Store) writeMarker(ctx context.Context, key string, rec *spaceRecord, onlyNew bool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	o := s.bucket.Object(key)
	if onlyNew {
		o = o.If(gcs.Conditions{DoesNotExist: true})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := o.NewWriter(ctx)
	w.ContentType = "application/json"
	w.ChunkSize = 0
	if _, err := io.Copy(w, bytes.NewReader(b)); err != nil {
		cancel() // abandons the upload
		_ = w.Close()
		return err
	}
	return w.Close()
}

// needSpace returns ErrNotFound unless the space marker exists.
func (s *Store) needSpace(ctx context.Context, space string) error {
	key, err := s.spaceKey(space)
	if err != nil {
		return err
	}
	_, err = s.bucket.Object(key).Attrs(ctx)
	if err != nil && errors.Is(mapErr(err), storage.ErrNotFound) {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return err
}

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (s *Store) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

// CreateSpaceIfAbsent implements storage.SpaceCreator: the marker is
// written on condition that no object has its name (ifGenerationMatch=0),
// so exactly one of concurrent creators is told it created the space and
// the ACLs another set are kept.
func (s *Store) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return false, wrap("create space", space, err)
	}
	err = s.writeMarker(ctx, key, &spaceRecord{ACLs: map[string]string{}}, true)
	if conditionFailed(err) {
		return false, nil
	}
	return err == nil, wrap("create space", space, err)
}

// DeleteSpace deletes the marker of an empty space; a missing space is
// success.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	err := s.needSpace(ctx, space)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete space", space, err)
	}
	it := s.bucket.Objects(ctx, &gcs.Query{Prefix: s.cfg.Prefix + space + "/"})
	it.PageInfo().MaxSize = 1
	_, err = it.Next()
	switch {
	case err == nil:
		return wrap("delete space", space, storage.ErrSpaceNotEmpty)
	case !errors.Is(err, iterator.Done):
		return wrap("delete space", space, err)
	}
	key, _ := s.spaceKey(space)
	err = s.bucket.Object(key).Delete(ctx)
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	return wrap("delete space", space, err)
}

// SpaceACLs returns the space's ACLs from its marker.
func (s *Store) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	rec, err := s.readSpace(ctx, space)
	if err != nil {
		return nil, wrap("space acls", space, err)
	}
	return rec.ACLs, nil
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (s *Store) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := s.needSpace(ctx, space); err != nil {
		return wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	key, _ := s.spaceKey(space)
	return wrap("set space acls", space, s.writeMarker(ctx, key, &spaceRecord{ACLs: acls}, false))
}
