package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// statOnly is a MarkerBackend whose objects are the names in a set.
type statOnly map[string]bool

func (b statOnly) Read(context.Context, string) (io.ReadCloser, error) {
	return nil, storage.ErrNotFound
}
func (b statOnly) Stat(_ context.Context, key string) error {
	if !b[key] {
		return storage.ErrNotFound
	}
	return nil
}
func (b statOnly) WriteMarker(context.Context, string, []byte, bool) error { return nil }
func (b statOnly) Delete(context.Context, string) error                    { return nil }
func (b statOnly) Any(context.Context, string) (bool, error)               { return false, nil }
func (b statOnly) MapErr(err error) error                                  { return err }
func (b statOnly) ConditionFailed(error) bool                              { return false }

func TestRestoreSource(t *testing.T) {
	s := Spaces{Layout: Layout{Prefix: "p/", MaxNameLen: 1024}, Backend: statOnly{"p/s": true}, Wrap: Wrap("test", func(err error) error { return err })}
	v, _ := TrashVersion(TrashName(time.Unix(0, 0), "0123456789abcdef", storage.ReplacedByDelete))
	versions := func() ([]storage.Version, error) { return []storage.Version{v}, nil }
	key, src, err := s.RestoreSource(t.Context(), "s", "a/b", "", versions)
	name, _ := CutTrashID(v.ID)
	if err != nil || key != "p/s/a/b" || src != TrashItemPrefix("p/", "s", "a/b")+name {
		t.Errorf("RestoreSource newest: %q, %q, %v", key, src, err)
	}
	if _, _, err := s.RestoreSource(t.Context(), "s", "a/b", "version:x", versions); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("RestoreSource of a foreign ID: %v", err)
	}
	if _, _, err := s.RestoreSource(t.Context(), "gone", "a/b", v.ID, versions); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("RestoreSource in a missing space: %v", err)
	}
	if _, _, err := s.RestoreSource(t.Context(), "s", "", v.ID, versions); !errors.Is(err, storage.ErrInvalidID) {
		t.Errorf("RestoreSource of an empty ID: %v", err)
	}
}

func TestMarkerSpace(t *testing.T) {
	l := Layout{Prefix: "p/", MaxNameLen: 1024}
	for name, want := range map[string]string{"p/photos": "photos", "p/": "", "p/.mill-trash/": "", "q/photos": "", "p/.mill-tmp": "", "p/a\\b": ""} {
		got, ok := l.MarkerSpace(name)
		if ok != (want != "") || ok && got != want {
			t.Errorf("MarkerSpace(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestReadErr(t *testing.T) {
	s := Spaces{Layout: Layout{Prefix: "p/", MaxNameLen: 1024}, Backend: statOnly{"p/s": true}}
	missing := fmt.Errorf("no object: %w", storage.ErrNotFound)
	other := errors.New("service said no")
	if err := s.ReadErr(t.Context(), "s", missing); err != missing {
		t.Errorf("ReadErr of a missing item in a space that exists: %v", err)
	}
	if err := s.ReadErr(t.Context(), "gone", missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `space "gone"`) {
		t.Errorf("ReadErr of a missing item in a missing space: %v", err)
	}
	if err := s.ReadErr(t.Context(), "gone", other); err != other {
		t.Errorf("ReadErr of another error: %v", err)
	}
}
