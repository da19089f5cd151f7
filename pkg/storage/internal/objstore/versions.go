package objstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
)

// TrashIDPrefix starts the version IDs (storage.Recoverer) of trash
// copies: the prefix, then the copy's TrashName.
const TrashIDPrefix = "trash:"

// TrashVersion describes the trash copy named name (under the item's
// TrashItemPrefix) as a version, without its Info; ok is false for a name
// TrashName did not make.
func TrashVersion(name string) (v storage.Version, ok bool) {
	at, reason, ok := ParseTrashName(name)
	if !ok {
		return storage.Version{}, false
	}
	return storage.Version{ID: TrashIDPrefix + name, Replaced: at, Reason: reason}, true
}

// CutTrashID returns the trash copy name a version ID holds; ok is false
// unless versionID is one TrashVersion could have made.
func CutTrashID(versionID string) (name string, ok bool) {
	name, ok = strings.CutPrefix(versionID, TrashIDPrefix)
	if !ok {
		return "", false
	}
	_, _, ok = ParseTrashName(name)
	return name, ok
}

// NoVersion is the error for a version ID the store cannot have made.
func NoVersion(versionID string) error {
	return fmt.Errorf("%w: no recoverable version %q", storage.ErrNotFound, storage.ShortID(versionID))
}

// NewestFirst orders versions by when they were replaced, newest first.
func NewestFirst(vs []storage.Version) {
	slices.SortStableFunc(vs, func(a, b storage.Version) int { return b.Replaced.Compare(a.Replaced) })
}

// PickVersion returns versionID, or when it is "" the ID of the newest
// of the item's versions (ErrNotFound when there is none).
func PickVersion(versionID string, versions func() ([]storage.Version, error)) (string, error) {
	if versionID != "" {
		return versionID, nil
	}
	vs, err := versions()
	if err != nil {
		return "", err
	}
	if len(vs) == 0 {
		return "", fmt.Errorf("%w: no recoverable version", storage.ErrNotFound)
	}
	return vs[0].ID, nil
}
