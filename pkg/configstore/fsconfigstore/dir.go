package fsconfigstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/configstore"
)

// historyDir holds the versions of every file of a Dir.
const historyDir = ".history"

// Store is a configstore.Store over a local directory, for the dev mode and tests. The
// current content of a file is the plain file dir/NAME; version N of it is
// .history/NAME/N (zero-padded) with its description in N.json. A file
// written or removed by another tool is noticed at the next call and
// recorded as a version without an author. Conditions are checked under a
// lock shared by every Dir of the same directory in this process; other
// processes writing the directory are not excluded. All file access goes
// through an os.Root, so no name can reach outside the directory.
type Store struct {
	dir     string
	maxSize int64
	mu      *sync.Mutex
}

var _ configstore.Store = (*Store)(nil)

var (
	dirLocksMu sync.Mutex
	dirLocks   = map[string]*sync.Mutex{}
)

// New returns a store over dir (created when missing). maxSize ≤ 0
// means DefaultMaxSize.
func New(dir string, maxSize int64) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("configstore: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("configstore: %w", err)
	}
	if maxSize <= 0 {
		maxSize = configstore.DefaultMaxSize
	}
	dirLocksMu.Lock()
	mu := dirLocks[abs]
	if mu == nil {
		mu = &sync.Mutex{}
		dirLocks[abs] = mu
	}
	dirLocksMu.Unlock()
	return &Store{dir: abs, maxSize: maxSize, mu: mu}, nil
}

// Where implements configstore.Store.
func (d *Store) Where(name string) string { return filepath.Join(d.dir, name) }

// dirVersion is the description of a version, N.json.
type dirVersion struct {
	Time    time.Time `json:"time"`
	ETag    string    `json:"etag,omitempty"`
	Size    int64     `json:"size"`
	Deleted bool      `json:"deleted,omitempty"`
	Author  string    `json:"author,omitempty"`
	Action  string    `json:"action,omitempty"`
}

func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// lock opens the root and takes the directory's lock; call the returned
// function to release both.
func (d *Store) lock(name string) (*os.Root, func(), error) {
	if err := configstore.CheckName(name); err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("configstore: %w", err)
	}
	d.mu.Lock()
	return root, func() { d.mu.Unlock(); root.Close() }, nil
}

// locked runs f under the directory's lock with the file's versions, after
// recording what another tool did (sync).
func (d *Store) locked(name string, f func(root *os.Root, vs []configstore.Version) error) error {
	root, unlock, err := d.lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	vs, err := d.sync(root, name)
	if err != nil {
		return err
	}
	return f(root, vs)
}

// Get implements configstore.Store.
func (d *Store) Get(ctx context.Context, name string) (file *configstore.File, err error) {
	err = d.locked(name, func(root *os.Root, vs []configstore.Version) error {
		if len(vs) == 0 || vs[0].Deleted {
			return fmt.Errorf("%s: %w", d.Where(name), configstore.ErrNotFound)
		}
		file, err = d.read(root, name, vs[0])
		return err
	})
	return file, err
}

// GetVersion implements configstore.Store.
func (d *Store) GetVersion(ctx context.Context, name, id string) (file *configstore.File, err error) {
	err = d.locked(name, func(root *os.Root, vs []configstore.Version) error {
		for _, v := range vs {
			if v.ID == id && !v.Deleted {
				file, err = d.read(root, name, v)
				return err
			}
		}
		return fmt.Errorf("%s (version %s): %w", d.Where(name), id, configstore.ErrNotFound)
	})
	return file, err
}

func (d *Store) read(root *os.Root, name string, v configstore.Version) (*configstore.File, error) {
	if v.Size > d.maxSize {
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit: %w", d.Where(name), v.Size, d.maxSize, configstore.ErrTooLarge)
	}
	data, err := root.ReadFile(filepath.Join(historyDir, name, v.ID))
	if err != nil {
		return nil, fmt.Errorf("configstore: %w", err)
	}
	return &configstore.File{Data: data, Version: v}, nil
}

// Put implements configstore.Store.
func (d *Store) Put(ctx context.Context, name string, data []byte, cond configstore.Cond, meta configstore.Meta) (configstore.Version, error) {
	if int64(len(data)) > d.maxSize {
		return configstore.Version{}, fmt.Errorf("%s: %d bytes, over the %d-byte limit: %w", d.Where(name), len(data), d.maxSize, configstore.ErrTooLarge)
	}
	var v configstore.Version
	err := d.locked(name, func(root *os.Root, vs []configstore.Version) error {
		if err := checkCond(d.Where(name), vs, cond); err != nil {
			return err
		}
		var err error
		v, err = d.record(root, name, vs, data, dirVersion{Time: time.Now().UTC(), ETag: etagOf(data), Size: int64(len(data)), Author: meta.Author, Action: meta.Action})
		if err != nil {
			return err
		}
		return writeAtomic(root, name, data)
	})
	if err != nil {
		return configstore.Version{}, err
	}
	return v, nil
}

// Delete implements configstore.Store.
func (d *Store) Delete(ctx context.Context, name string, cond configstore.Cond, meta configstore.Meta) error {
	if cond.IfAbsent {
		return fmt.Errorf("configstore: delete %s: IfAbsent makes no sense for a delete", d.Where(name))
	}
	return d.locked(name, func(root *os.Root, vs []configstore.Version) error {
		if err := checkCond(d.Where(name), vs, cond); err != nil {
			return err
		}
		if len(vs) == 0 || vs[0].Deleted {
			return nil
		}
		if _, err := d.record(root, name, vs, nil, dirVersion{Time: time.Now().UTC(), Deleted: true, Author: meta.Author, Action: meta.Action}); err != nil {
			return err
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("configstore: %w", err)
		}
		return nil
	})
}

// History implements configstore.Store.
func (d *Store) History(ctx context.Context, name string, limit int) (out []configstore.Version, err error) {
	err = d.locked(name, func(_ *os.Root, vs []configstore.Version) error {
		if limit > 0 && len(vs) > limit {
			vs = vs[:limit]
		}
		out = vs
		return nil
	})
	return out, err
}

func checkCond(where string, vs []configstore.Version, cond configstore.Cond) error {
	exists := len(vs) > 0 && !vs[0].Deleted
	switch {
	case cond.IfAbsent && exists:
		return fmt.Errorf("%s exists: %w", where, configstore.ErrConflict)
	case cond.IfMatch != "" && (!exists || vs[0].ETag != cond.IfMatch):
		return fmt.Errorf("%s: %w", where, configstore.ErrConflict)
	}
	return nil
}

// versions lists the recorded versions, newest first.
func (d *Store) versions(root *os.Root, name string) ([]configstore.Version, error) {
	entries, err := fs.ReadDir(root.FS(), filepath.ToSlash(filepath.Join(historyDir, name)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configstore: %w", err)
	}
	var vs []configstore.Version
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		b, err := root.ReadFile(filepath.Join(historyDir, name, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("configstore: %w", err)
		}
		var dv dirVersion
		if err := json.Unmarshal(b, &dv); err != nil {
			return nil, fmt.Errorf("configstore: %s: %w", filepath.Join(d.dir, historyDir, name, e.Name()), err)
		}
		vs = append(vs, configstore.Version{ID: id, ETag: dv.ETag, Time: dv.Time, Size: dv.Size, Deleted: dv.Deleted, Meta: configstore.Meta{Author: dv.Author, Action: dv.Action}})
	}
	slices.SortFunc(vs, func(a, b configstore.Version) int { return strings.Compare(b.ID, a.ID) })
	if len(vs) > 0 {
		vs[0].Current = true
	}
	return vs, nil
}

// sync returns the versions after recording what another tool did to the
// current file since the last recorded version.
func (d *Store) sync(root *os.Root, name string) ([]configstore.Version, error) {
	vs, err := d.versions(root, name)
	if err != nil {
		return nil, err
	}
	info, err := root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if len(vs) > 0 && !vs[0].Deleted {
			return d.syncRecord(root, name, vs, nil, dirVersion{Time: time.Now().UTC(), Deleted: true, Action: "removed outside the config store"})
		}
		return vs, nil
	case err != nil:
		return nil, fmt.Errorf("configstore: %w", err)
	}
	if info.Size() > d.maxSize {
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit: %w", d.Where(name), info.Size(), d.maxSize, configstore.ErrTooLarge)
	}
	data, err := root.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("configstore: %w", err)
	}
	if tag := etagOf(data); len(vs) == 0 || vs[0].Deleted || vs[0].ETag != tag {
		return d.syncRecord(root, name, vs, data, dirVersion{Time: info.ModTime().UTC(), ETag: tag, Size: int64(len(data)), Action: "written outside the config store"})
	}
	return vs, nil
}

func (d *Store) syncRecord(root *os.Root, name string, vs []configstore.Version, data []byte, dv dirVersion) ([]configstore.Version, error) {
	if _, err := d.record(root, name, vs, data, dv); err != nil {
		return nil, err
	}
	return d.versions(root, name)
}

// record stores a new version (its content first, then its description)
// and returns it.
func (d *Store) record(root *os.Root, name string, vs []configstore.Version, data []byte, dv dirVersion) (configstore.Version, error) {
	n := 1
	if len(vs) > 0 {
		last, err := strconv.Atoi(vs[0].ID)
		if err != nil {
			return configstore.Version{}, fmt.Errorf("configstore: %s: bad version id %q", d.Where(name), vs[0].ID)
		}
		n = last + 1
	}
	id := fmt.Sprintf("%08d", n)
	hdir := filepath.Join(historyDir, name)
	if err := root.MkdirAll(hdir, 0o755); err != nil {
		return configstore.Version{}, fmt.Errorf("configstore: %w", err)
	}
	if !dv.Deleted {
		if err := writeAtomic(root, filepath.Join(hdir, id), data); err != nil {
			return configstore.Version{}, err
		}
	}
	b, err := json.Marshal(dv)
	if err != nil {
		return configstore.Version{}, err
	}
	if err := writeAtomic(root, filepath.Join(hdir, id+".json"), b); err != nil {
		return configstore.Version{}, err
	}
	return configstore.Version{ID: id, ETag: dv.ETag, Time: dv.Time, Size: dv.Size, Deleted: dv.Deleted, Current: true, Meta: configstore.Meta{Author: dv.Author, Action: dv.Action}}, nil
}

// writeAtomic replaces name under root with data: a temporary file, fsync,
// rename.
func writeAtomic(root *os.Root, name string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("configstore: %w", err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("configstore: write %s: %w", name, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("configstore: write %s: %w", name, err)
	}
	return nil
}
