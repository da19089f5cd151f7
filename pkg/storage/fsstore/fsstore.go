package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// MaxSegmentLen is the longest segment (the text between slashes) of a
// content ID, in bytes: a file name is at most 255 bytes and the blob name
// adds 19.
const MaxSegmentLen = 236

const (
	tmpDir     = ".mill-tmp"
	spaceFile  = ".mill-space.json"
	dirSuffix  = ".d"
	metaSuffix = ".m"
	blobSuffix = ".b"
)

var (
	_ storage.Provider  = (*Store)(nil)
	_ storage.Recoverer = (*Store)(nil)
)

// Store is a filesystem store rooted at one directory. It is safe for
// concurrent use by the goroutines of one process; two processes must not
// write the same root at once.
type Store struct {
	dir       string   // the absolute root, for messages
	root      *os.Root // every file access goes through it
	retention time.Duration
	// mu serialises changes of sidecars, space records, directories and
	// the trash; content streams outside it.
	mu        sync.Mutex
	lastPurge time.Time
	lists     listCache // sorted directory listings (listcache.go)
	spillDir  string    // where large listings are indexed (listindex.go)
}

// Option configures a Store.
type Option func(*Store)

// WithRetention sets how long the trash keeps what the store deleted or
// replaced (default storage.DefaultRetention).
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithListSpillDir sets the directory where the listing of a large
// directory is sorted and indexed, in temporary files unlinked as soon as
// they are created (default os.TempDir()). New refuses a directory that
// CheckListSpillDir refuses, or that is the store's root or lies inside
// it (through symbolic links too): spills never sit among the content.
func WithListSpillDir(dir string) Option { return func(s *Store) { s.spillDir = dir } }

// CheckListSpillDir says what is wrong with dir as a directory to spill
// listings to (WithListSpillDir), or nil: it must be an absolute path to
// an existing directory (a symbolic link to one is followed). Whether it
// lies inside a store's root is for the caller, who knows the roots.
func CheckListSpillDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%q is not a directory", dir)
	}
	return nil
}

// checkSpillDir refuses a spill directory that CheckListSpillDir refuses
// or that is, or lies inside, the store's root, both resolved through
// symbolic links.
func (s *Store) checkSpillDir() error {
	if err := CheckListSpillDir(s.spillDir); err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(s.spillDir)
	if err != nil {
		return err
	}
	root, err := filepath.EvalSymlinks(s.dir)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: %q is the store's root or lies inside it: spill outside the content", ErrUnsafe, s.spillDir)
	}
	return nil
}

// New opens (creating when missing) the store rooted at root and purges
// its expired trash. The store holds the directory open until Close.
func New(root string, opts ...Option) (*Store, error) {
	if root == "" {
		return nil, errors.New("fsstore: new: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fsstore: new %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("fsstore: new %q: %w", root, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("fsstore: new %q: %w", root, err)
	}
	s := &Store{dir: abs, root: r, retention: storage.DefaultRetention}
	for _, o := range opts {
		o(s)
	}
	if s.retention <= 0 {
		r.Close()
		return nil, fmt.Errorf("fsstore: new %q: retention %v is not positive", root, s.retention)
	}
	if s.spillDir != "" {
		if err := s.checkSpillDir(); err != nil {
			r.Close()
			return nil, fmt.Errorf("fsstore: new %q: list spill directory: %w", root, err)
		}
	}
	for _, d := range []string{tmpDir, trashDir} {
		if err := s.ensureDir(d); err != nil {
			r.Close()
			return nil, fmt.Errorf("fsstore: new %q: %w", root, err)
		}
	}
	s.lastPurge = time.Now()
	if _, err := s.purge(context.Background(), s.lastPurge); err != nil {
		r.Close()
		return nil, fmt.Errorf("fsstore: new %q: purge the trash: %w", root, err)
	}
	return s, nil
}

// ensureDir creates the top-level directory rel unless it exists, refusing
// a symbolic link or a file in its place.
func (s *Store) ensureDir(rel string) error {
	if err := s.root.Mkdir(rel, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return s.checkDirs(rel, false)
}

// Close releases the store's directory handle and the listings it keeps.
func (s *Store) Close() error {
	s.lists.close()
	return s.root.Close()
}

// Root returns the store's absolute root directory.
func (s *Store) Root() string { return s.dir }

// Kind returns storage.KindFS.
func (s *Store) Kind() storage.Kind { return storage.KindFS }

// meta is the sidecar of one item.
type meta struct {
	MD5        string            `json:"md5"`
	Size       int64             `json:"size"`
	MimeType   string            `json:"mimetype"`
	Modified   time.Time         `json:"modified"`
	Properties map[string]string `json:"properties"`
	Blob       string            `json:"blob"`
	// BlobModified and BlobFile are the blob's modification time and
	// file number (inode; 0 where the system has none) when the sidecar
	// was written: a blob that no longer has them, or the recorded size,
	// was replaced behind the store's back (see blob.go). Absent in
	// sidecars written before they existed.
	BlobModified time.Time `json:"blobModified,omitzero"`
	BlobFile     uint64    `json:"blobFile,omitempty"`

	// Set by readItem, not stored: the blob's size as it is, and whether
	// it is not the file the sidecar describes.
	blobSize int64
	replaced bool
}

type spaceRecord struct {
	ACLs map[string]string `json:"acls"`
}

// mapErr maps filesystem errors onto storage's portable errors; other
// errors pass unchanged.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrInvalidID),
		errors.Is(err, storage.ErrChecksumMismatch), errors.Is(err, storage.ErrSpaceNotEmpty), errors.Is(err, ErrUnsafe):
		return err
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %w", storage.ErrNotFound, err)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %w", storage.ErrInvalidID, err)
	}
	return err
}

func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fsstore: %s %s: %w", op, storage.QuoteID(key), mapErr(err))
}

// itemPaths returns, relative to the root, the directory holding the item
// and its sidecar, and the item's last segment.
func itemPaths(space, id string) (dir, metaPath, seg string, err error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return "", "", "", err
	}
	if err := storage.ValidateContentID(id); err != nil {
		return "", "", "", err
	}
	segs := strings.Split(id, "/")
	for _, g := range segs {
		switch {
		case g == "":
			return "", "", "", fmt.Errorf("%w: content ID %s has an empty segment", storage.ErrInvalidID, storage.QuoteID(id))
		case g == "." || g == "..":
			return "", "", "", fmt.Errorf("%w: content ID %s has a %q segment", storage.ErrInvalidID, storage.QuoteID(id), g)
		case len(g) > MaxSegmentLen:
			return "", "", "", fmt.Errorf("%w: content ID %s has a segment of %d bytes (limit %d)", storage.ErrInvalidID, storage.QuoteID(id), len(g), MaxSegmentLen)
		}
	}
	parts := make([]string, 0, len(segs))
	parts = append(parts, space)
	for _, g := range segs[:len(segs)-1] {
		parts = append(parts, g+dirSuffix)
	}
	dir = filepath.Join(parts...)
	seg = segs[len(segs)-1]
	return dir, filepath.Join(dir, seg+metaSuffix), seg, nil
}
