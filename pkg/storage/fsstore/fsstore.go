package fsstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
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
	clock     clock.Clock
	// mu serialises changes of sidecars, space records, directories and
	// the trash; content streams outside it.
	mu        sync.Mutex
	lastPurge time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithRetention sets how long the trash keeps what the store deleted or
// replaced (default storage.DefaultRetention).
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithClock sets the clock of modified times, trash entries and their
// expiry (default the system clock).
func WithClock(c clock.Clock) Option { return func(s *Store) { s.clock = c } }

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
	s.clock = clock.Or(s.clock)
	if s.retention <= 0 {
		r.Close()
		return nil, fmt.Errorf("fsstore: new %q: retention %v is not positive", root, s.retention)
	}
	for _, d := range []string{tmpDir, trashDir} {
		if err := s.ensureDir(d); err != nil {
			r.Close()
			return nil, fmt.Errorf("fsstore: new %q: %w", root, err)
		}
	}
	s.lastPurge = s.clock.Now()
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

// Close releases the store's directory handle.
func (s *Store) Close() error { return s.root.Close() }

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

// ListContent returns up to limit IDs after `after`, byte-wise ascending.
// Symbolic links are not items and are left out.
func (s *Store) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if limit <= 0 {
		limit = storage.DefaultPageSize
	}
	if err := s.needSpace(space); err != nil {
		return nil, false, wrap("list", space, err)
	}
	ids, more, err := s.list(space, after, limit)
	return ids, more, wrap("list", space, err)
}

func (s *Store) list(space, after string, limit int) ([]string, bool, error) {
	out := make([]string, 0, min(limit+1, 1024))
	if _, err := s.walk(space, "", after, limit+1, &out); err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

type entry struct {
	key   string // the ID ("a/b") of a file, the ID prefix ("a/") of a directory
	name  string
	isDir bool
}

// walk appends to out, in byte-wise order, the IDs under dir (whose IDs all
// start with prefix) that sort after `after`, until out holds n IDs. Each
// directory's entries are sorted by the IDs they stand for — a directory
// "a" as "a/" — which is what makes a depth-first walk byte-wise ordered.
func (s *Store) walk(dir, prefix, after string, n int, out *[]string) (bool, error) {
	ents, err := s.readDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && prefix != "" {
			return false, nil // removed by a concurrent delete
		}
		return false, err
	}
	list := make([]entry, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			continue // never an item: see files.go
		case e.IsDir() && strings.HasSuffix(name, dirSuffix):
			list = append(list, entry{key: prefix + strings.TrimSuffix(name, dirSuffix) + "/", name: name, isDir: true})
		case e.Type().IsRegular() && strings.HasSuffix(name, metaSuffix):
			list = append(list, entry{key: prefix + strings.TrimSuffix(name, metaSuffix), name: name})
		}
	}
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range list {
		if e.isDir {
			// Every ID inside starts with e.key: skip the directory when
			// they all sort at or before the marker.
			if !strings.HasPrefix(after, e.key) && e.key < after {
				continue
			}
			full, err := s.walk(filepath.Join(dir, e.name), e.key, after, n, out)
			if err != nil || full {
				return full, err
			}
			continue
		}
		if e.key > after {
			*out = append(*out, e.key)
			if len(*out) >= n {
				return true, nil
			}
		}
	}
	return false, nil
}

func (m *meta) info(id string) *storage.Info {
	return &storage.Info{
		ContentID:        id,
		Checksum:         m.MD5,
		ProviderChecksum: storage.ProviderMD5(m.MD5),
		Size:             m.Size,
		MimeType:         m.MimeType,
		Modified:         m.Modified,
		Properties:       m.Properties,
	}
}

// item is an item's files, relative to the root.
type item struct {
	dir, metaPath, seg string
}

func (it item) blob(m *meta) string { return filepath.Join(it.dir, m.Blob) }

// locate checks the IDs and the space and returns the item's paths.
func (s *Store) locate(space, id string) (item, error) {
	dir, metaPath, seg, err := itemPaths(space, id)
	if err != nil {
		return item{}, err
	}
	if err := s.needSpace(space); err != nil {
		return item{}, err
	}
	return item{dir: dir, metaPath: metaPath, seg: seg}, nil
}

// readItem reads and validates the item's sidecar and checks that the blob
// it names is a regular file. A missing item is fs.ErrNotExist.
func (s *Store) readItem(it item) (*meta, error) {
	if err := s.checkDirs(it.dir, false); err != nil {
		return nil, err
	}
	b, err := s.readSmall(it.metaPath)
	if err != nil {
		return nil, err
	}
	m, err := parseMeta(it.metaPath, it.seg, b)
	if err != nil {
		return nil, err
	}
	if _, err := s.regular(it.blob(m)); err != nil {
		return nil, err
	}
	return m, nil
}

// lookup reads the item's sidecar, looking again when a concurrent put
// replaced the blob between reading the sidecar and checking the blob.
func (s *Store) lookup(space, id string) (item, *meta, error) {
	it, err := s.locate(space, id)
	if err != nil {
		return item{}, nil, err
	}
	for attempt := 0; ; attempt++ {
		m, err := s.readItem(it)
		if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
			if _, serr := s.root.Lstat(it.metaPath); serr == nil {
				continue // the sidecar is there: its blob was just replaced
			}
		}
		return it, m, err
	}
}

// BlobPath returns the absolute path of the file holding the item's
// current content, for tests and fault injection that change the bytes
// behind the store's back (content gone sour). The path is valid until the
// item is next written; nothing else should be done through it.
func (s *Store) BlobPath(space, id string) (string, error) {
	it, m, err := s.lookup(space, id)
	if err != nil {
		return "", wrap("blob path", space+"/"+id, err)
	}
	return filepath.Join(s.dir, it.blob(m)), nil
}

// Head returns the item's Info.
func (s *Store) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, m, err := s.lookup(space, id)
	if err != nil {
		return nil, wrap("head", space+"/"+id, err)
	}
	return m.info(id), nil
}

// Get opens the item's content. The Info describes exactly the bytes the
// stream returns, even while other goroutines overwrite the item.
func (s *Store) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		it, m, err := s.lookup(space, id)
		if err != nil {
			return nil, nil, wrap("get", space+"/"+id, err)
		}
		f, err := s.open(it.blob(m))
		if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
			continue // replaced or deleted between the two reads: look again
		}
		if err != nil {
			return nil, nil, wrap("get", space+"/"+id, err)
		}
		return f, m.info(id), nil
	}
}

// Put streams r into the item, atomically (see the package doc).
func (s *Store) Put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	info, err := s.put(ctx, space, id, r, opts)
	return info, wrap("put", space+"/"+id, err)
}

func (s *Store) put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, _, _, err := itemPaths(space, id); err != nil {
		return nil, err
	}
	want, err := storage.NormalizeMD5(opts.Checksum)
	if err != nil {
		return nil, err
	}
	it, err := s.locate(space, id)
	if err != nil {
		return nil, err
	}
	f, tmp, err := s.createTemp("put")
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			s.root.Remove(tmp)
		}
	}()
	h := md5.New()
	src := ctxio.NewReader(ctx, r)
	if opts.Size >= 0 {
		src = io.LimitReader(src, opts.Size+1) // one byte more reveals a longer stream
	}
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	if opts.Size >= 0 && n != opts.Size {
		return nil, fmt.Errorf("read %d bytes, PutOptions.Size says %d", n, opts.Size)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if want != "" && sum != want {
		return nil, fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, sum, want)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	mime := opts.MimeType
	if mime == "" {
		mime = storage.DefaultMimeType
	}
	props := map[string]string{}
	for k, v := range opts.Properties {
		props[k] = v
	}
	m := &meta{MD5: sum, Size: n, MimeType: mime, Properties: props, Blob: blobName(it.seg)}

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.needSpace(space); err != nil { // deleted meanwhile
		return nil, err
	}
	if err := s.checkDirs(it.dir, true); err != nil {
		return nil, err
	}
	if err := s.root.MkdirAll(it.dir, 0o755); err != nil {
		return nil, err
	}
	old, err := s.readItem(it)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err // a sidecar or blob fsstore did not write: leave it for an operator
	}
	if err := s.root.Rename(tmp, it.blob(m)); err != nil {
		return nil, err
	}
	committed = true // the temporary file is gone; commit cleans up the blob
	m.Modified = s.clock.Now().UTC()
	if err := s.commit(space, id, it, m, old, storage.ReplacedByOverwrite); err != nil {
		return nil, err
	}
	return m.info(id), nil
}

// SetProperties replaces the item's user properties and sets its modified
// time to now.
func (s *Store) SetProperties(ctx context.Context, space, id string, props map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, m, err := s.lookup(space, id)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	entry, err := s.preserve(space, id, it, m, storage.ReplacedByProperties)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	m.Properties = map[string]string{}
	for k, v := range props {
		m.Properties[k] = v
	}
	m.Modified = s.clock.Now().UTC()
	b, err := json.Marshal(m)
	if err == nil {
		err = s.writeFileAtomic(it.metaPath, b)
	}
	if err != nil {
		s.drop(entry)
		return wrap("set properties", space+"/"+id, err)
	}
	s.maybePurge()
	return nil
}

// Delete removes the item; a missing item or space is success.
func (s *Store) Delete(ctx context.Context, space, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, m, err := s.lookup(space, id)
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete", space+"/"+id, err)
	}
	entry, err := s.preserve(space, id, it, m, storage.ReplacedByDelete)
	if err != nil {
		return wrap("delete", space+"/"+id, err)
	}
	if err := s.root.Remove(it.metaPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.drop(entry)
		return wrap("delete", space+"/"+id, err)
	}
	s.root.Remove(it.blob(m))
	s.removeEmptyDirs(space, it.dir)
	s.maybePurge()
	return nil
}

// removeEmptyDirs removes dir and its parents up to (not including) the
// space directory while they are empty (Remove refuses non-empty ones).
func (s *Store) removeEmptyDirs(space, dir string) {
	for ; dir != space && strings.HasPrefix(dir, space+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if s.root.Remove(dir) != nil {
			break
		}
	}
}
