package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/millfleet/mill/pkg/storage"
)

// spaceExists reports whether the space record exists.
func (s *Store) spaceExists(space string) (bool, error) {
	if err := s.checkDirs(space, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	_, err := s.regular(filepath.Join(space, spaceFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (s *Store) needSpace(space string) error {
	if err := storage.ValidateSpaceID(space); err != nil {
		return err
	}
	ok, err := s.spaceExists(space)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return nil
}

// ListSpaces returns the spaces in byte-wise order. A symbolic link in
// the root is not a space.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := s.readDir(".")
	if err != nil {
		return nil, wrap("list spaces", s.dir, err)
	}
	out := []string{}
	for _, e := range ents {
		if !e.IsDir() || storage.ValidateSpaceID(e.Name()) != nil {
			continue
		}
		ok, err := s.spaceExists(e.Name())
		if err != nil {
			return nil, wrap("list spaces", e.Name(), err)
		}
		if ok {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// readDir lists directory rel (entries' types as Lstat sees them: a
// symbolic link is never IsDir).
func (s *Store) readDir(rel string) ([]fs.DirEntry, error) {
	d, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// CreateSpace creates space; an existing space is left as it is.
func (s *Store) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

var _ storage.SpaceCreator = (*Store)(nil)

// CreateSpaceIfAbsent implements storage.SpaceCreator: the space record is
// created exclusively (a hard link fails when it exists), so of several
// processes creating the space in one directory only one is told it did.
func (s *Store) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := storage.ValidateSpaceID(space); err != nil {
		return false, wrap("create space", space, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok, err := s.spaceExists(space); err != nil || ok {
		return false, wrap("create space", space, err)
	}
	if err := s.root.Mkdir(space, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, wrap("create space", space, err)
	}
	if err := s.checkDirs(space, false); err != nil {
		return false, wrap("create space", space, err)
	}
	b, _ := json.Marshal(spaceRecord{ACLs: map[string]string{}})
	created, err := s.createFileAtomic(filepath.Join(space, spaceFile), b)
	return created, wrap("create space", space, err)
}

// DeleteSpace removes an empty space; a missing space is success. A space
// holding a symbolic link is refused (ErrUnsafe).
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storage.ValidateSpaceID(space); err != nil {
		return wrap("delete space", space, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.spaceExists(space)
	if err != nil || !ok {
		return wrap("delete space", space, err)
	}
	ids, _, err := s.list(space, "", 1)
	if err != nil {
		return wrap("delete space", space, err)
	}
	if len(ids) > 0 {
		return wrap("delete space", space, storage.ErrSpaceNotEmpty)
	}
	if err := s.noLinks(space); err != nil {
		return wrap("delete space", space, err)
	}
	// Move the directory out of sight in one rename, then remove it.
	gone := filepath.Join(tmpDir, "space-"+randHex())
	if err := s.root.Rename(space, gone); err != nil {
		return wrap("delete space", space, err)
	}
	s.lists.invalidate(space)
	return wrap("delete space", space, s.root.RemoveAll(gone))
}

// noLinks refuses a directory tree holding a symbolic link.
func (s *Store) noLinks(rel string) error {
	return fs.WalkDir(s.root.FS(), filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return unsafef("%s is a symbolic link", p)
		}
		return nil
	})
}

// SpaceACLs returns the ACLs of space.
func (s *Store) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.needSpace(space); err != nil {
		return nil, wrap("space acls", space, err)
	}
	rel := filepath.Join(space, spaceFile)
	b, err := s.readSmall(rel)
	if err != nil {
		return nil, wrap("space acls", space, err)
	}
	var rec spaceRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, wrap("space acls", space, unsafef("space record %s does not parse: %v", rel, err))
	}
	if rec.ACLs == nil {
		rec.ACLs = map[string]string{}
	}
	return rec.ACLs, nil
}

// SetSpaceACLs replaces the ACLs of space.
func (s *Store) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.needSpace(space); err != nil {
		return wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	b, err := json.Marshal(spaceRecord{ACLs: acls})
	if err != nil {
		return wrap("set space acls", space, err)
	}
	return wrap("set space acls", space, s.writeFileAtomic(filepath.Join(space, spaceFile), b))
}
