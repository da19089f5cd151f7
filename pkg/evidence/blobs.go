package evidence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Blobs is where a log keeps its tiles and checkpoints: a flat namespace of
// keys ("tile/8/0/000", "checkpoint"). The log only adds and replaces
// blobs; it never deletes one.
type Blobs interface {
	// Get returns a blob's bytes; ErrNotFound when there is none, an
	// error when it is larger than MaxBlob.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes a blob whole, replacing any blob of that key: a reader
	// sees the old bytes or the new ones, never a part.
	Put(ctx context.Context, key string, data []byte) error
	// List returns the keys that begin with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// MaxBlob bounds the blobs a log reads: a data tile holds at most 256
// events of at most 16 KiB each (4 MiB); a larger blob is refused, so a
// hostile store cannot exhaust a verifier's memory one blob at a time.
const MaxBlob = 5 << 20

// ErrNotFound is Blobs.Get's error for a key with no blob.
var ErrNotFound = errors.New("evidence: blob not found")

// CheckKey checks that a key is one a log writes: non-empty path elements
// of A-Z a-z 0-9 . _ - separated by "/", none "." or "..", at most 512
// bytes. Blobs implementations refuse other keys, so a hostile key never
// names a file or object outside their root.
func CheckKey(key string) error {
	if key == "" || len(key) > 512 {
		return fmt.Errorf("evidence: blob key %q: empty or too long", key)
	}
	for _, el := range strings.Split(key, "/") {
		if el == "" || el == "." || el == ".." || strings.IndexFunc(el, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		}) >= 0 {
			return fmt.Errorf("evidence: blob key %q: want path elements of A-Z a-z 0-9 . _ -", key)
		}
	}
	return nil
}

// Dir is Blobs in a filesystem directory: one file per key. Put writes a
// temporary file and renames it over the key's file.
type Dir string

var _ Blobs = Dir("")

func (d Dir) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	if d == "" {
		return "", errors.New("evidence: blob directory not set")
	}
	return filepath.Join(string(d), filepath.FromSlash(key)), nil
}

// Get implements Blobs.
func (d Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBlob+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBlob {
		return nil, fmt.Errorf("evidence: blob %s is larger than %d bytes", key, MaxBlob)
	}
	return b, nil
}

// Put implements Blobs.
func (d Dir) Put(_ context.Context, key string, data []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("evidence: put %s: %w", key, err)
	}
	return nil
}

// List implements Blobs.
func (d Dir) List(_ context.Context, prefix string) ([]string, error) {
	if d == "" {
		return nil, errors.New("evidence: blob directory not set")
	}
	root := string(d)
	// Walk only the directory the prefix names ("checkpoints/" is the
	// directory checkpoints), not the whole root.
	start := root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		if err := CheckKey(prefix[:i]); err != nil {
			return nil, err
		}
		start = filepath.Join(root, filepath.FromSlash(prefix[:i]))
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), ".put-") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if k := filepath.ToSlash(rel); strings.HasPrefix(k, prefix) && CheckKey(k) == nil {
			keys = append(keys, k)
		}
		return nil
	})
	sort.Strings(keys)
	return keys, err
}
