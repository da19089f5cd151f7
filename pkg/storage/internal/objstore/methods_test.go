package objstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func TestMethodsHead(t *testing.T) {
	objects := map[string]int64{"p/s/a": 3}
	m := Provider[int64]{
		Spaces: Spaces{Layout: Layout{Prefix: "p/", MaxNameLen: 1024}, Backend: statOnly{"p/s": true}, Wrap: Wrap("test", func(err error) error { return err })},
		Recovery: Recovery[int64]{
			Attrs: func(_ context.Context, key string) (*int64, error) {
				size, ok := objects[key]
				if !ok {
					return nil, storage.ErrNotFound
				}
				return &size, nil
			},
			Info: func(size *int64, id string) *storage.Info { return &storage.Info{ContentID: id, Size: *size} },
		},
	}.Methods()
	if info, err := m.Head(t.Context(), "s", "a"); err != nil || info.ContentID != "a" || info.Size != 3 {
		t.Errorf("Head of an item: %+v, %v", info, err)
	}
	_, err := m.Head(t.Context(), "s", "b")
	if !errors.Is(err, storage.ErrNotFound) || strings.Contains(err.Error(), "space") || !strings.HasPrefix(err.Error(), `test: head "s/b": `) {
		t.Errorf("Head of a missing item: %v", err)
	}
	if _, err := m.Head(t.Context(), "gone", "a"); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `space "gone"`) {
		t.Errorf("Head in a missing space: %v", err)
	}
	if _, err := m.Head(t.Context(), "s", ""); !errors.Is(err, storage.ErrInvalidID) {
		t.Errorf("Head of an empty ID: %v", err)
	}
}
