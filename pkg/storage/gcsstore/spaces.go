package gcsstore

import (
	"context"
	"io"
)

// ListSpaces returns the spaces (marker objects) in byte-wise order.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	out := []string{}
	err := s.bucket.list(ctx, listing{prefix: s.cfg.Prefix, delimiter: "/", fields: []string{"name"}}, func(a *attrs) (bool, error) {
		if space, ok := s.layout.MarkerSpace(a.Name); ok {
			out = append(out, space)
		}
		return true, nil
	})
	if err != nil {
		return nil, wrap("list spaces", s.cfg.Prefix, err)
	}
	return out, nil
}

// markers are the GCS calls behind the space markers (objstore.Spaces).
type markers struct{ s *Store }

func (m markers) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	return m.s.bucket.read(ctx, key, 0, 0, -1, nil)
}

func (m markers) Stat(ctx context.Context, key string) error {
	_, err := m.s.bucket.attrs(ctx, key, 0)
	return err
}

// WriteMarker writes a space marker: a new one when onlyNew
// (objects.create), else over the existing one (objects.replace). Both
// are conditional writes, retried.
func (m markers) WriteMarker(ctx context.Context, key string, body []byte, onlyNew bool) error {
	u := upload{key: key, contentType: "application/json"}
	if onlyNew {
		return m.s.bucket.create(ctx, u, body)
	}
	return m.s.bucket.replace(ctx, u, body)
}

// Delete removes a space marker (objects.deleteLive: conditional deletes,
// retried).
func (m markers) Delete(ctx context.Context, key string) error {
	return m.s.bucket.deleteLive(ctx, key)
}

func (m markers) Any(ctx context.Context, prefix string) (bool, error) {
	found := false
	err := m.s.bucket.list(ctx, listing{prefix: prefix, pageSize: 1, fields: []string{"name"}}, func(*attrs) (bool, error) {
		found = true
		return false, nil
	})
	return found, err
}

func (markers) MapErr(err error) error         { return mapErr(err) }
func (markers) ConditionFailed(err error) bool { return conditionFailed(err) }
