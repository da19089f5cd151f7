package changelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir keeps each entry as the file ID.json in a local directory (the dev
// mode), created exclusively so an entry is never replaced.
type Dir struct{ dir string }

var _ Log = (*Dir)(nil)

// NewDir returns a change log in dir (created when missing).
func NewDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return &Dir{dir: dir}, nil
}

// String names the log for messages.
func (d *Dir) String() string { return d.dir }

// Record implements Log.
func (d *Dir) Record(ctx context.Context, c Change) (Change, error) {
	c, b, err := prepare(c)
	if err != nil {
		return Change{}, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return Change{}, fmt.Errorf("changelog: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(c.ID+".json", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Change{}, fmt.Errorf("changelog: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return Change{}, fmt.Errorf("changelog: %w", err)
	}
	return c, nil
}

// List implements Log.
func (d *Dir) List(ctx context.Context, after string, limit int) ([]Change, string, error) {
	if after != "" && !validID(after) {
		return nil, "", fmt.Errorf("%w: %q", ErrBadToken, after)
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, "", fmt.Errorf("changelog: %w", err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, "", fmt.Errorf("changelog: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && validID(id) && id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	n := pageSize(limit)
	next := ""
	if len(ids) > n {
		ids = ids[:n]
		next = ids[n-1]
	}
	out := make([]Change, 0, len(ids))
	for _, id := range ids {
		b, err := root.ReadFile(id + ".json")
		if err != nil {
			return nil, "", fmt.Errorf("changelog: %w", err)
		}
		var c Change
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, "", fmt.Errorf("changelog: %s: %w", filepath.Join(d.dir, id+".json"), err)
		}
		out = append(out, c)
	}
	return out, next, nil
}
