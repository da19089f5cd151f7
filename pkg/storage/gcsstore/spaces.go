package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"io"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/pkg/storage"
)

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

// markers are the GCS calls behind the space markers (objstore.Spaces).
type markers struct{ s *Store }

func (m markers) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	return m.s.bucket.Object(key).NewReader(ctx)
}

func (m markers) Stat(ctx context.Context, key string) error {
	_, err := m.s.bucket.Object(key).Attrs(ctx)
	return err
}

// WriteMarker writes a space marker; onlyNew makes it conditional on the
// marker not existing (ifGenerationMatch=0).
func (m markers) WriteMarker(ctx context.Context, key string, body []byte, onlyNew bool) error {
	o := m.s.bucket.Object(key)
	if onlyNew {
		o = o.If(gcs.Conditions{DoesNotExist: true})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := o.NewWriter(ctx)
	w.ContentType = "application/json"
	w.ChunkSize = 0
	if _, err := io.Copy(w, bytes.NewReader(body)); err != nil {
		cancel() // abandons the upload
		_ = w.Close()
		return err
	}
	return w.Close()
}

func (m markers) Delete(ctx context.Context, key string) error {
	return m.s.bucket.Object(key).Delete(ctx)
}

func (m markers) Any(ctx context.Context, prefix string) (bool, error) {
	it := m.s.bucket.Objects(ctx, &gcs.Query{Prefix: prefix})
	it.PageInfo().MaxSize = 1
	_, err := it.Next()
	if errors.Is(err, iterator.Done) {
		return false, nil
	}
	return err == nil, err
}

func (markers) MapErr(err error) error         { return mapErr(err) }
func (markers) ConditionFailed(err error) bool { return conditionFailed(err) }

// needSpace returns ErrNotFound unless the space marker exists.
func (s *Store) needSpace(ctx context.Context, space string) error { return s.spaces.Need(ctx, space) }
