package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/millfleet/mill/pkg/storage"
)

// MarkerBackend is what Spaces needs of a service: the calls on single
// objects and its reading of errors.
type MarkerBackend interface {
	// Read opens an object's body.
	Read(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat checks that an object exists.
	Stat(ctx context.Context, key string) error
	// WriteMarker writes a marker's JSON body (as application/json);
	// onlyNew makes the write conditional on no object having the name.
	WriteMarker(ctx context.Context, key string, body []byte, onlyNew bool) error
	// Delete removes an object.
	Delete(ctx context.Context, key string) error
	// Any reports whether some object's name starts with prefix.
	Any(ctx context.Context, prefix string) (bool, error)
	// MapErr maps a service error onto storage's errors.
	MapErr(err error) error
	// ConditionFailed reports whether err refused a conditional write.
	ConditionFailed(err error) bool
}

// spaceRecord is the body of a space marker.
type spaceRecord struct {
	ACLs map[string]string `json:"acls"`
}

// Spaces keeps each space as a marker object (Layout.SpaceKey) whose JSON
// body holds the space's ACLs. Wrap names the provider in its errors.
// Methods gives a provider storage.Provider's space methods to embed.
type Spaces struct {
	Layout  Layout
	Backend MarkerBackend
	Wrap    func(op, key string, err error) error
}

// NotFound reports whether the service's err (MapErr) is ErrNotFound.
func (s Spaces) NotFound(err error) bool {
	return errors.Is(s.Backend.MapErr(err), storage.ErrNotFound)
}

// ReadErr tells why a read of an item of space failed: when it found no
// object and the space is missing, the space's error; otherwise err.
func (s Spaces) ReadErr(ctx context.Context, space string, err error) error {
	if !s.NotFound(err) {
		return err
	}
	if serr := s.Need(ctx, space); serr != nil {
		return serr
	}
	return err
}

// ReadACLs reads the ACLs in the space's marker (unwrapped errors).
func (s Spaces) ReadACLs(ctx context.Context, space string) (map[string]string, error) {
	key, err := s.Layout.SpaceKey(space)
	if err != nil {
		return nil, err
	}
	r, err := s.Backend.Read(ctx, key)
	if err != nil {
		if s.NotFound(err) {
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
	return rec.ACLs, nil
}

// WriteACLs writes the space's marker holding acls (unwrapped errors).
func (s Spaces) WriteACLs(ctx context.Context, space string, acls map[string]string, onlyNew bool) error {
	key, err := s.Layout.SpaceKey(space)
	if err != nil {
		return err
	}
	b, err := json.Marshal(&spaceRecord{ACLs: acls})
	if err != nil {
		return err
	}
	return s.Backend.WriteMarker(ctx, key, b, onlyNew)
}

// Need returns ErrNotFound unless the space marker exists.
func (s Spaces) Need(ctx context.Context, space string) error {
	key, err := s.Layout.SpaceKey(space)
	if err != nil {
		return err
	}
	err = s.Backend.Stat(ctx, key)
	if err != nil && s.NotFound(err) {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return err
}

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (s Spaces) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

// CreateSpaceIfAbsent implements storage.SpaceCreator: the marker is
// written on condition that no object has its name, so exactly one of
// concurrent creators is told it created the space and the ACLs another
// set are kept.
func (s Spaces) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	err := s.WriteACLs(ctx, space, map[string]string{}, true)
	if s.Backend.ConditionFailed(err) {
		return false, nil
	}
	return err == nil, s.Wrap("create space", space, err)
}

// DeleteSpace deletes the marker of an empty space; a missing space is
// success.
func (s Spaces) DeleteSpace(ctx context.Context, space string) error {
	err := s.Need(ctx, space)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return s.Wrap("delete space", space, err)
	}
	full, err := s.Backend.Any(ctx, s.Layout.SpacePrefix(space))
	switch {
	case err != nil:
		return s.Wrap("delete space", space, err)
	case full:
		return s.Wrap("delete space", space, storage.ErrSpaceNotEmpty)
	}
	key, _ := s.Layout.SpaceKey(space)
	err = s.Backend.Delete(ctx, key)
	if s.NotFound(err) {
		return nil
	}
	return s.Wrap("delete space", space, err)
}

// SpaceACLs returns the space's ACLs from its marker.
func (s Spaces) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	acls, err := s.ReadACLs(ctx, space)
	return acls, s.Wrap("space acls", space, err)
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (s Spaces) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := s.Need(ctx, space); err != nil {
		return s.Wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	return s.Wrap("set space acls", space, s.WriteACLs(ctx, space, acls, false))
}

// RestoreSource resolves a Restore of versionID ("": the newest of
// versions) in a store that keeps trash copies: the item's name and the
// trash copy's, once the space is known to exist.
func (s Spaces) RestoreSource(ctx context.Context, space, id, versionID string, versions func() ([]storage.Version, error)) (key, src string, err error) {
	key, err = s.Layout.ContentKey(space, id)
	if err != nil {
		return "", "", err
	}
	versionID, err = PickVersion(versionID, versions)
	if err != nil {
		return "", "", err
	}
	name, ok := CutTrashID(versionID)
	if !ok {
		return "", "", NoVersion(versionID)
	}
	if err := s.Need(ctx, space); err != nil {
		return "", "", err
	}
	return key, s.Layout.TrashItemPrefix(space, id) + name, nil
}

// SpaceMethods are storage.Provider's space methods (and
// storage.SpaceCreator's) over Spaces. A provider embeds them under an
// unexported alias: only these five methods become its own, nothing else
// of Spaces (its fields, Need, RestoreSource...).
type SpaceMethods struct{ s Spaces }

// Methods returns the space methods over s.
func (s Spaces) Methods() SpaceMethods { return SpaceMethods{s} }

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (m SpaceMethods) CreateSpace(ctx context.Context, space string) error {
	return m.s.CreateSpace(ctx, space)
}

// CreateSpaceIfAbsent implements storage.SpaceCreator (see
// Spaces.CreateSpaceIfAbsent).
func (m SpaceMethods) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	return m.s.CreateSpaceIfAbsent(ctx, space)
}

// DeleteSpace deletes the marker of an empty space; a missing space is
// success.
func (m SpaceMethods) DeleteSpace(ctx context.Context, space string) error {
	return m.s.DeleteSpace(ctx, space)
}

// SpaceACLs returns the space's ACLs from its marker.
func (m SpaceMethods) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	return m.s.SpaceACLs(ctx, space)
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (m SpaceMethods) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	return m.s.SetSpaceACLs(ctx, space, acls)
}
