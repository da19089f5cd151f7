package fsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// The trash (see the package doc): what a delete, an overwrite or a
// property change replaces is kept under
//
//	<root>/.mill-trash/<space>/<sha256 of the content ID>/<version>.m   {"contentId", "reason", "replaced", "item": sidecar}
//	<root>/.mill-trash/<space>/<sha256 of the content ID>/<version>.b   the bytes (a hard link to the blob)
//
// where <version> is the UTC time it was replaced and 16 random hex digits
// ("20250102T030405.123456789Z-3f9a1c20de4b7a61"), so names sort by age and
// expire by the time in their name.

const (
	trashDir    = ".mill-trash"
	stampLayout = "20060102T150405.000000000Z"
	versionLen  = len(stampLayout) + 1 + 16
	purgeEvery  = time.Hour
)

// trashed is the sidecar of a trash entry.
type trashed struct {
	ContentID string    `json:"contentId"`
	Reason    string    `json:"reason"`
	Replaced  time.Time `json:"replaced"`
	Item      meta      `json:"item"`
}

// trashItemDir is the trash directory of one item.
func trashItemDir(space, id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(trashDir, space, hex.EncodeToString(sum[:]))
}

// versionTime parses the time of a version name; ok is false for a name
// fsstore did not make.
func versionTime(v string) (time.Time, bool) {
	if len(v) != versionLen || v[len(stampLayout)] != '-' || !validBlobName("x", "x."+v[len(stampLayout)+1:]+blobSuffix) {
		return time.Time{}, false
	}
	t, err := time.Parse(stampLayout, v[:len(stampLayout)])
	return t, err == nil
}

func (s *Store) newVersion() (string, time.Time) {
	now := time.Now().UTC()
	return now.Format(stampLayout) + "-" + randHex(), now
}

// preserve keeps the item's current state m in the trash before it is
// replaced for reason: the blob is hard-linked (copied where the
// filesystem cannot link) and the sidecar written. s.mu is held. It
// returns the entry's paths so a failed replacement can drop it.
func (s *Store) preserve(space, id string, it item, m *meta, reason string) (entry []string, err error) {
	dir := trashItemDir(space, id)
	if err := s.checkDirs(dir, true); err != nil {
		return nil, err
	}
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := s.checkDirs(dir, false); err != nil {
		return nil, err
	}
	v, now := s.newVersion()
	blob, side := filepath.Join(dir, v+blobSuffix), filepath.Join(dir, v+metaSuffix)
	if err := s.linkOrCopy(it.blob(m), blob); err != nil {
		return nil, fmt.Errorf("keep the replaced content recoverable: %w", err)
	}
	b, err := json.Marshal(trashed{ContentID: id, Reason: reason, Replaced: now, Item: *m})
	if err == nil {
		err = s.writeFileAtomic(side, b)
	}
	if err != nil {
		s.root.Remove(blob)
		return nil, fmt.Errorf("keep the replaced content recoverable: %w", err)
	}
	s.syncDir(dir)
	return []string{side, blob}, nil
}

// drop removes a trash entry preserve made for a replacement that failed.
func (s *Store) drop(entry []string) {
	for _, p := range entry {
		s.root.Remove(p)
	}
}

// linkOrCopy makes dst a hard link to the regular file src, or a copy of
// it where the filesystem has no hard links.
func (s *Store) linkOrCopy(src, dst string) error {
	if _, err := s.regular(src); err != nil {
		return err
	}
	if err := s.root.Link(src, dst); err == nil {
		return nil
	}
	in, err := s.open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return s.writeAtomic(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// version is one trash entry of an item.
type version struct {
	name string // the version ID
	t    trashed
}

// versions reads the item's trash entries that have not expired, newest
// first. Entries fsstore did not write (or that were tampered with) are
// left out.
func (s *Store) versions(space, id string) ([]version, error) {
	if _, _, _, err := itemPaths(space, id); err != nil {
		return nil, err
	}
	dir := trashItemDir(space, id)
	if err := s.checkDirs(dir, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ents, err := s.readDir(dir)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-s.retention)
	var out []version
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), metaSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		at, ok := versionTime(name)
		if !ok || at.Before(cutoff) {
			continue
		}
		v, err := s.readVersion(dir, name, id)
		if err != nil {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b version) int { return strings.Compare(b.name, a.name) })
	return out, nil
}

// readVersion reads and validates one trash entry of content ID id.
func (s *Store) readVersion(dir, name, id string) (version, error) {
	rel := filepath.Join(dir, name+metaSuffix)
	b, err := s.readSmall(rel)
	if err != nil {
		return version{}, err
	}
	var t trashed
	if err := json.Unmarshal(b, &t); err != nil {
		return version{}, unsafef("trash entry %s does not parse: %v", rel, err)
	}
	if t.ContentID != id {
		return version{}, unsafef("trash entry %s is of another item", rel)
	}
	if !storage.ValidMD5(t.Item.MD5) || t.Item.Size < 0 {
		return version{}, unsafef("trash entry %s records MD5 %q size %d", rel, storage.ShortID(t.Item.MD5), t.Item.Size)
	}
	if _, err := s.regular(filepath.Join(dir, name+blobSuffix)); err != nil {
		return version{}, err
	}
	if t.Item.Properties == nil {
		t.Item.Properties = map[string]string{}
	}
	return version{name: name, t: t}, nil
}

// Versions implements storage.Recoverer: the item's trash entries within
// the retention period, newest first.
func (s *Store) Versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vs, err := s.versions(space, id)
	if err != nil {
		return nil, wrap("versions", space+"/"+id, err)
	}
	out := make([]storage.Version, 0, len(vs))
	for _, v := range vs {
		out = append(out, storage.Version{ID: v.name, Replaced: v.t.Replaced, Reason: v.t.Reason, Info: *v.t.Item.info(id)})
	}
	return out, nil
}

// Restore implements storage.Recoverer: the trash entry's bytes are linked
// back as a new blob of the item and its sidecar written, after the item's
// current state (if any) was put in the trash in turn.
func (s *Store) Restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := s.restore(space, id, versionID)
	return info, wrap("restore", space+"/"+id, err)
}

func (s *Store) restore(space, id, versionID string) (*storage.Info, error) {
	vs, err := s.versions(space, id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(vs, func(v version) bool { return versionID == "" || v.name == versionID })
	if i < 0 {
		if versionID == "" {
			return nil, fmt.Errorf("%w: no recoverable version", storage.ErrNotFound)
		}
		return nil, fmt.Errorf("%w: no recoverable version %q", storage.ErrNotFound, storage.ShortID(versionID))
	}
	v := vs[i]
	it, err := s.locate(space, id)
	if err != nil {
		return nil, err
	}
	old, err := s.readItem(it)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := s.checkDirs(it.dir, true); err != nil {
		return nil, err
	}
	if err := s.root.MkdirAll(it.dir, 0o755); err != nil {
		return nil, err
	}
	m := v.t.Item
	m.Blob = blobName(it.seg)
	m.Modified = time.Now().UTC()
	m.Properties = maps.Clone(m.Properties)
	if err := s.linkOrCopy(filepath.Join(trashItemDir(space, id), v.name+blobSuffix), it.blob(&m)); err != nil {
		return nil, err
	}
	if err := s.commit(space, id, it, &m, old, storage.ReplacedByOverwrite); err != nil {
		return nil, err
	}
	return m.info(id), nil
}

// commit makes m (whose blob is in place) the item's current state: it
// keeps old (the current state, nil for none) in the trash for reason,
// writes the sidecar, and removes old's blob. On failure it removes m's
// blob and the trash entry, leaving old current. s.mu is held.
func (s *Store) commit(space, id string, it item, m, old *meta, reason string) error {
	defer s.lists.invalidate(it.dir)
	var entry []string
	if old != nil {
		var err error
		if entry, err = s.preserve(space, id, it, old, reason); err != nil {
			s.root.Remove(it.blob(m))
			return err
		}
	}
	fi, err := s.regular(it.blob(m))
	if err != nil {
		s.root.Remove(it.blob(m))
		s.drop(entry)
		return err
	}
	m.record(fi)
	b, err := json.Marshal(m)
	if err == nil {
		err = s.writeFileAtomic(it.metaPath, b)
	}
	if err != nil {
		s.root.Remove(it.blob(m))
		s.drop(entry)
		return err
	}
	s.syncDir(it.dir)
	if old != nil && old.Blob != m.Blob {
		s.root.Remove(it.blob(old))
	}
	s.maybePurge()
	return nil
}

// maybePurge runs PurgeTrash when it last ran more than purgeEvery ago.
// s.mu is held.
func (s *Store) maybePurge() {
	now := time.Now()
	if now.Sub(s.lastPurge) < purgeEvery {
		return
	}
	s.lastPurge = now
	_, _ = s.purge(context.Background(), now)
}

// PurgeTrash removes the trash entries older than the store's retention
// period and returns how many it removed. The store also does this when it
// opens and, at most hourly, after a write that put something in the
// trash.
func (s *Store) PurgeTrash(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.purge(ctx, time.Now())
}

func (s *Store) purge(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-s.retention)
	n := 0
	spaces, err := s.readDir(trashDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, sp := range spaces {
		if !sp.IsDir() {
			continue
		}
		spDir := filepath.Join(trashDir, sp.Name())
		items, err := s.readDir(spDir)
		if err != nil {
			return n, err
		}
		for _, itd := range items {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if !itd.IsDir() {
				continue
			}
			dir := filepath.Join(spDir, itd.Name())
			ents, err := s.readDir(dir)
			if err != nil {
				return n, err
			}
			for _, e := range ents {
				name := strings.TrimSuffix(strings.TrimSuffix(e.Name(), metaSuffix), blobSuffix)
				if at, ok := versionTime(name); ok && at.Before(cutoff) && e.Type().IsRegular() {
					if s.root.Remove(filepath.Join(dir, e.Name())) == nil && strings.HasSuffix(e.Name(), metaSuffix) {
						n++
					}
				}
			}
			s.root.Remove(dir) // only when empty
		}
		s.root.Remove(spDir) // only when empty
	}
	return n, nil
}
