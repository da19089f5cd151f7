// Package fsreportstore is the reportstore.Store in a local directory (the
// dev mode): a key is a path under Dir, written atomically (temporary file,
// rename), and read back through an os.Root so no location can reach
// outside it.
package fsreportstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/pkg/reportstore"
)

// Store keeps reports under Dir.
type Store struct {
	Dir string
}

var _ reportstore.Store = Store{}

// Put implements reportstore.Store.
func (d Store) Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (_ string, err error) {
	if key == "" || strings.Contains(key, "..") || filepath.IsAbs(key) {
		return "", fmt.Errorf("reportstore: report key %q: not a plain relative path", key)
	}
	path := filepath.Join(d.Dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("reportstore: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return "", fmt.Errorf("reportstore: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return "", fmt.Errorf("reportstore: write %s: %w", path, err)
	}
	if n != size {
		return "", fmt.Errorf("reportstore: write %s: %d bytes, want %d", path, n, size)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return "", fmt.Errorf("reportstore: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("reportstore: %w", err)
	}
	return path, nil
}

// Open implements reportstore.Store: only absolute paths under Dir that
// name regular files are read.
func (d Store) Open(_ context.Context, location string) (io.ReadCloser, int64, error) {
	abs, err := filepath.Abs(d.Dir)
	if err != nil {
		return nil, 0, err
	}
	rel, err := filepath.Rel(abs, location)
	if err != nil || !filepath.IsAbs(location) || rel == "." || strings.HasPrefix(rel, "..") {
		return nil, 0, fmt.Errorf("%w: %q", reportstore.ErrForeign, location)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", reportstore.ErrForeign, err)
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%w: %q is not a file", reportstore.ErrForeign, location)
	}
	return f, info.Size(), nil
}
