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
	"path/filepath"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
)

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

// walk appends to out, in byte-wise order, the IDs under dir (whose IDs all
// start with prefix) that sort after `after`, until out holds n IDs. Each
// directory's entries are sorted by the IDs they stand for — a directory
// "a" as "a/" — which is what makes a depth-first walk byte-wise ordered;
// the walk starts in each directory at the marker (a binary search).
func (s *Store) walk(dir, prefix, after string, n int, out *[]string) (bool, error) {
	d, err := s.dirList(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && prefix != "" {
			return false, nil // removed by a concurrent delete
		}
		return false, err
	}
	defer s.lists.release(d)
	rel, inside := strings.CutPrefix(after, prefix)
	if !inside && after > prefix {
		return false, nil // every ID here sorts before the marker
	}
	for k, err := range d.entries(rel, !inside) {
		if err != nil {
			return false, fmt.Errorf("list directory %s: %w", dir, err)
		}
		key := prefix + string(k)
		if isDirKey(k) {
			full, err := s.walk(filepath.Join(dir, keyName(k)), key, after, n, out)
			if err != nil || full {
				return full, err
			}
			continue
		}
		*out = append(*out, key)
		if len(*out) >= n {
			return true, nil
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
	fi, err := s.regular(it.blob(m))
	if err != nil {
		return nil, err
	}
	m.check(fi)
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
	it, m, err := s.lookup(space, id)
	if err != nil {
		return nil, wrap("head", space+"/"+id, err)
	}
	info := m.info(id)
	if m.replaced {
		if err := s.digest(ctx, it, m, info); err != nil {
			return nil, wrap("head", space+"/"+id, err)
		}
	}
	return info, nil
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
		info := m.info(id)
		if m.replaced {
			// The sidecar's MD5 does not describe these bytes and the
			// reader hashes them anyway: no provider checksum.
			info.ProviderChecksum, info.Size = "", m.blobSize
		}
		return f, info, nil
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
	m.Modified = time.Now().UTC()
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
	m.Modified = time.Now().UTC()
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
	s.lists.invalidate(it.dir)
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
