package fschangelog

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

	"github.com/millfleet/mill/pkg/changelog"
)

// Log keeps each entry as the file ID.json in a local directory (the dev
// mode), created exclusively so an entry is never replaced.
type Log struct{ dir string }

var _ changelog.Log = (*Log)(nil)

// New returns a change log in dir (created when missing).
func New(dir string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return &Log{dir: dir}, nil
}

// String names the log for messages.
func (d *Log) String() string { return d.dir }

// Record implements changelog.Log.
func (d *Log) Record(ctx context.Context, c changelog.Change) (changelog.Change, error) {
	c, b, err := changelog.Prepare(c)
	if err != nil {
		return changelog.Change{}, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(c.ID+".json", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: %w", err)
	}
	return c, nil
}

// List implements changelog.Log.
func (d *Log) List(ctx context.Context, after string, limit int) ([]changelog.Change, string, error) {
	if after != "" && !changelog.ValidID(after) {
		return nil, "", fmt.Errorf("changelog: %w: %q", changelog.ErrBadToken, after)
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
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && changelog.ValidID(id) && id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	n := changelog.PageSize(limit)
	next := ""
	if len(ids) > n {
		ids = ids[:n]
		next = ids[n-1]
	}
	out := make([]changelog.Change, 0, len(ids))
	for _, id := range ids {
		b, err := root.ReadFile(id + ".json")
		if err != nil {
			return nil, "", fmt.Errorf("changelog: %w", err)
		}
		var c changelog.Change
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, "", fmt.Errorf("changelog: %s: %w", filepath.Join(d.dir, id+".json"), err)
		}
		out = append(out, c)
	}
	return out, next, nil
}
