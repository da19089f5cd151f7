package objstore

import (
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

func TestTrashVersions(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	name := TrashName(at, "0123456789abcdef", storage.ReplacedByDelete)
	v, ok := TrashVersion(name)
	if !ok || !v.Replaced.Equal(at) || v.Reason != storage.ReplacedByDelete {
		t.Fatalf("TrashVersion(%q) = %+v, %v", name, v, ok)
	}
	if back, ok := CutTrashID(v.ID); !ok || back != name {
		t.Errorf("CutTrashID(%q) = %q, %v", v.ID, back, ok)
	}
	for _, bad := range []string{name, "version:" + name, TrashIDPrefix + "x", TrashIDPrefix} {
		if _, ok := CutTrashID(bad); ok {
			t.Errorf("CutTrashID(%q) accepted it", bad)
		}
	}
	if _, ok := TrashVersion("x." + storage.ReplacedByDelete); ok {
		t.Error("TrashVersion accepted a foreign name")
	}
	older, _ := TrashVersion(TrashName(at.Add(-time.Hour), "fedcba9876543210", storage.ReplacedByOverwrite))
	vs := []storage.Version{older, v}
	NewestFirst(vs)
	if vs[0].ID != v.ID {
		t.Errorf("NewestFirst: %v first", vs[0].Replaced)
	}
	list := func() ([]storage.Version, error) { return vs, nil }
	if id, err := PickVersion("", list); err != nil || id != v.ID {
		t.Errorf("PickVersion newest: %q, %v", id, err)
	}
	if id, err := PickVersion("given", list); err != nil || id != "given" {
		t.Errorf("PickVersion given: %q, %v", id, err)
	}
	if _, err := PickVersion("", func() ([]storage.Version, error) { return nil, nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("PickVersion of none: %v", err)
	}
	if !errors.Is(NoVersion("x"), storage.ErrNotFound) {
		t.Error("NoVersion is not ErrNotFound")
	}
}
