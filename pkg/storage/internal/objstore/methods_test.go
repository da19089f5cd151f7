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

func TestMethodsListContent(t *testing.T) {
	// Names under p/s/ as a service lists them, IDs encoded ('~' for
	// '/'); "x!" is not a name Encode makes.
	names := []string{"p/s/a", "p/s/b~c", "p/s/d", "p/s/x!", "p/s/z"}
	for _, ignoresStart := range []bool{false, true} {
		var starts []string
		m := Provider[int64]{
			Spaces: Spaces{
				Layout: Layout{Prefix: "p/", MaxNameLen: 1024,
					Encode: func(id string) string { return strings.ReplaceAll(id, "/", "~") },
					Decode: func(name string) (string, bool) {
						return strings.ReplaceAll(name, "~", "/"), !strings.Contains(name, "!")
					},
				},
				Backend: statOnly{"p/s": true},
				Wrap:    Wrap("test", func(err error) error { return err }),
			},
			ListNames: func(_ context.Context, prefix, start string, _ int, each func(string) bool) error {
				starts = append(starts, start)
				for _, n := range names {
					if strings.HasPrefix(n, prefix) && (ignoresStart || n >= start) && !each(n) {
						return nil
					}
				}
				return nil
			},
		}.Methods()
		ids, more, err := m.ListContent(t.Context(), "s", "", 2)
		if err != nil || !more || strings.Join(ids, ",") != "a,b/c" {
			t.Errorf("first page (start ignored %v): %q, %v, %v", ignoresStart, ids, more, err)
		}
		ids, more, err = m.ListContent(t.Context(), "s", "b/c", 2)
		if err != nil || more || strings.Join(ids, ",") != "d,z" {
			t.Errorf("page after b/c (start ignored %v): %q, %v, %v", ignoresStart, ids, more, err)
		}
		if strings.Join(starts, ",") != ",p/s/b~c" {
			t.Errorf("ListNames started at %q", starts)
		}
		if _, _, err := m.ListContent(t.Context(), "gone", "", 2); !errors.Is(err, storage.ErrNotFound) || !strings.HasPrefix(err.Error(), `test: list "gone": `) {
			t.Errorf("ListContent of a missing space: %v", err)
		}
	}
}
