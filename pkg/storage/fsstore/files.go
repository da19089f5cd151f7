package fsstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
)

// ErrUnsafe reports that the store's files are not as fsstore writes them:
// a symbolic link anywhere under the root, a sidecar naming a file other
// than its item's blob, a sidecar that does not parse, or a file changed
// while it was being opened. fsstore refuses to read, write or delete
// through such a file; an operator should look at it. It wraps the portable
// storage.ErrUnsafe, so callers need not know the provider.
var ErrUnsafe error = unsafeError{}

type unsafeError struct{}

func (unsafeError) Error() string { return "fsstore: refused" }
func (unsafeError) Unwrap() error { return storage.ErrUnsafe }

// maxSidecarSize bounds what fsstore reads of a sidecar or space record.
const maxSidecarSize = 16 << 20

// All file access goes through s.root (an os.Root): no name, symlink or
// sidecar can reach outside the store's directory. Inside it, fsstore only
// follows what it wrote itself: the helpers below refuse symbolic links
// (checked with Lstat, and by identity for files they open) so one space
// or item cannot alias another.

// unsafef returns an error wrapping ErrUnsafe.
func unsafef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsafe}, args...)...)
}

// checkDirs checks that every directory on the way to rel (rel included)
// is a real directory, not a symbolic link. With missingOK a missing
// directory ends the check without error (the rest will be created).
func (s *Store) checkDirs(rel string, missingOK bool) error {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		fi, err := s.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && missingOK:
			return nil
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return unsafef("%s is a symbolic link", p)
		case !fi.IsDir():
			return unsafef("%s is not a directory", p)
		}
	}
	return nil
}

// regular checks that rel is a regular file (not a symbolic link) and
// returns its FileInfo.
func (s *Store) regular(rel string) (fs.FileInfo, error) {
	fi, err := s.root.Lstat(rel)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, unsafef("%s is a symbolic link", rel)
	case !fi.Mode().IsRegular():
		return nil, unsafef("%s is not a regular file", rel)
	}
	return fi, nil
}

// open opens the regular file rel for reading, refusing a symbolic link
// even when one replaces the file between the check and the open. A file
// replaced by another regular file meanwhile (a sidecar rewritten by an
// atomic rename) is looked at again.
func (s *Store) open(rel string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		fi, err := s.regular(rel)
		if err != nil {
			return nil, err
		}
		f, err := s.root.Open(rel)
		if err != nil {
			return nil, err
		}
		got, err := f.Stat()
		if err == nil && os.SameFile(fi, got) {
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		if attempt == 10 {
			return nil, unsafef("%s changed while it was opened", rel)
		}
	}
}

// readSmall reads a sidecar or space record.
func (s *Store) readSmall(rel string) ([]byte, error) {
	f, err := s.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSidecarSize+1))
	if err == nil && len(b) > maxSidecarSize {
		err = unsafef("%s is larger than %d bytes", rel, maxSidecarSize)
	}
	return b, err
}

// createTemp creates a new file in the temporary directory.
func (s *Store) createTemp(kind string) (*os.File, string, error) {
	for range 10 {
		rel := filepath.Join(tmpDir, kind+"-"+randHex())
		f, err := s.root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, rel, err
	}
	return nil, "", errors.New("no free temporary file name")
}

// writeAtomic writes a temporary file with write, fsyncs it and renames it
// to rel (replacing a file there, never following a link there).
func (s *Store) writeAtomic(rel string, write func(io.Writer) error) error {
	f, tmp, err := s.createTemp("w")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, rel)
	}
	if err != nil {
		s.root.Remove(tmp)
	}
	return err
}

// createFileAtomic writes data to rel atomically unless rel exists, and
// reports whether it did: the file is written to a temporary name, then
// hard-linked to rel, which fails when rel exists — in this process or
// another one writing the same directory.
func (s *Store) createFileAtomic(rel string, data []byte) (bool, error) {
	f, tmp, err := s.createTemp("w")
	if err != nil {
		return false, err
	}
	defer s.root.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	switch err := s.root.Link(tmp, rel); {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// writeFileAtomic writes data to rel atomically (writeAtomic).
func (s *Store) writeFileAtomic(rel string, data []byte) error {
	return s.writeAtomic(rel, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// syncDir fsyncs directory rel (best effort).
func (s *Store) syncDir(rel string) {
	if d, err := s.root.Open(rel); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func randHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// blobName returns a fresh blob name for an item whose last segment is seg.
func blobName(seg string) string { return seg + "." + randHex() + blobSuffix }

// validBlobName reports whether name is a blob name fsstore gives an item
// whose last segment is seg: seg + "." + 16 lower-case hex digits + ".b".
func validBlobName(seg, name string) bool {
	rest, ok := strings.CutPrefix(name, seg+".")
	if !ok {
		return false
	}
	hexPart, ok := strings.CutSuffix(rest, blobSuffix)
	if !ok || len(hexPart) != 16 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseMeta parses and validates the sidecar rel of an item whose last
// segment is seg: the blob it names must be that item's own blob (a plain
// name in the same directory), the MD5 valid and the size not negative.
func parseMeta(rel, seg string, b []byte) (*meta, error) {
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, unsafef("sidecar %s does not parse: %v", rel, err)
	}
	switch {
	case !validBlobName(seg, m.Blob):
		return nil, unsafef("sidecar %s names blob %q, which is not this item's (want %s.<16 hex digits>%s in the same directory)",
			rel, storage.ShortID(m.Blob), storage.ShortID(seg), blobSuffix)
	case !storage.ValidMD5(m.MD5):
		return nil, unsafef("sidecar %s records MD5 %q, not 32 lower-case hex digits", rel, storage.ShortID(m.MD5))
	case m.Size < 0:
		return nil, unsafef("sidecar %s records size %d", rel, m.Size)
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	return &m, nil
}
