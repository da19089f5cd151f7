// Package dirblob is a blob.Store in a filesystem directory: one file per
// key, the key's "/" the path separator, confined to the root (a key
// blob.CheckKey refuses is refused before any file is touched).
//
// Put writes a temporary file (".put-…") in the key's directory, syncs
// it, renames it over the key's file and syncs the directory, so after a
// crash at any moment the file holds the old bytes or the new ones. List
// leaves out temporary files a crash left behind. Delete removes the files
// and then the directories it emptied (never the root).
package dirblob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/blob"
)

// tmpPrefix begins the names of Put's temporary files.
const tmpPrefix = ".put-"

// Store is a blob.Store in the directory Root.
type Store struct {
	root string
	max  int64
}

var _ blob.Store = (*Store)(nil)

// New returns the store in directory root (created by the first Put),
// made with o (nil: no size bound).
func New(root string, o *blob.Options) *Store { return &Store{root: root, max: o.Max()} }

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) path(key string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", fmt.Errorf("dirblob: %w", err)
	}
	if s.root == "" {
		return "", errors.New("dirblob: no directory")
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Get implements blob.Store.
func (s *Store) Get(_ context.Context, key string) ([]byte, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("dirblob: %s: %w", p, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dirblob: %w", err)
	}
	defer f.Close()
	b, err := blob.ReadAll(f, p, s.max)
	if err != nil {
		return nil, fmt.Errorf("dirblob: %w", err)
	}
	return b, nil
}

// Put implements blob.Store.
func (s *Store) Put(_ context.Context, key string, data []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := writeAtomic(p, data); err != nil {
		return fmt.Errorf("dirblob: put %s: %w", p, err)
	}
	return nil
}

func writeAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete implements blob.Store.
func (s *Store) Delete(_ context.Context, keys ...string) error {
	dirs := map[string]bool{}
	for _, k := range keys {
		if _, err := s.path(k); err != nil {
			return err
		}
	}
	for _, k := range keys {
		p, _ := s.path(k)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dirblob: %w", err)
		}
		for d := filepath.Dir(k); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// The deepest first, each only when empty (os.Remove refuses others).
	ds := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(ds, func(a, b string) int { return len(b) - len(a) })
	for _, d := range ds {
		_ = os.Remove(filepath.Join(s.root, d))
	}
	return nil
}

// List implements blob.Store.
func (s *Store) List(_ context.Context, prefix string) ([]string, error) {
	if s.root == "" {
		return nil, errors.New("dirblob: no directory")
	}
	// Walk only the directory the prefix names ("checkpoints/" is the
	// directory checkpoints), not the whole root.
	start := s.root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		if blob.CheckKey(prefix[:i]) != nil {
			return nil, nil // no key begins with it
		}
		start = filepath.Join(s.root, filepath.FromSlash(prefix[:i]))
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		if k := filepath.ToSlash(rel); strings.HasPrefix(k, prefix) && blob.CheckKey(k) == nil {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dirblob: list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}
