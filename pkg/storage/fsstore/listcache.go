package fsstore

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A directory's entries, sorted by the IDs they stand for, are what a
// listing needs; reading and sorting them for every page made a walk of a
// flat space quadratic. listCache keeps the sorted entries of the
// directories listings are working through (see the package doc,
// Listings), so that each page costs a stat per directory on the way to
// the marker, a binary search and the page itself.

const (
	// cacheMinEntries is the size from which a directory's listing is
	// kept: a smaller one is cheaper to read again than to hold.
	cacheMinEntries = 64
	// cacheMaxDirs and cacheBudget bound the cache: at most that many
	// directories and that many bytes of names and entries; the most
	// recent listing is kept even when it alone is larger (the page being
	// listed needed it anyway).
	cacheMaxDirs = 16
	cacheBudget  = 32 << 20
	// cacheIdle: the next listing drops one nobody used for that long.
	cacheIdle = time.Minute
	// racyWindow is how much older than the read a directory's
	// modification time must be for the listing to be trusted on a later
	// page: a change in the same tick of a coarse clock (or of a
	// filesystem with 1 s or 2 s timestamps) as the read leaves the time
	// unchanged, so a listing read within that window is read again.
	racyWindow = 2 * time.Second
)

// Keys live in blocks of up to arenaBlock bytes, each key a length byte and the
// key (the segment, plus "/" for a directory: at most MaxSegmentLen+1
// bytes); an entry is the key's offset, block<<arenaShift | offset in the
// block. A million entries of 13-byte names take 14 MiB of blocks and 4 MiB
// of entries, and growing the listing never copies the names.
const (
	arenaShift = 20
	arenaBlock = 1 << arenaShift
)

// dirList is one directory's listable entries sorted by key.
type dirList struct {
	blocks [][]byte
	ents   []uint32
	// The directory as it was stat'ed before the read: a listing is used
	// again only while the directory still has this time and file number.
	mod     time.Time
	fileNum uint64
	trusted bool // mod is older than the read by racyWindow
	used    time.Time
}

func (d *dirList) at(e uint32) []byte {
	b := d.blocks[e>>arenaShift]
	off := e & (arenaBlock - 1)
	return b[off+1 : off+1+uint32(b[off])]
}

func (d *dirList) len() int         { return len(d.ents) }
func (d *dirList) key(i int) []byte { return d.at(d.ents[i]) }

// isDir reports whether entry i is a directory: only directory keys end
// in '/' (a segment never holds one).
func (d *dirList) isDir(i int) bool {
	k := d.key(i)
	return k[len(k)-1] == '/'
}

// add appends an entry with the given key.
func (d *dirList) add(rel string, key []byte, dir bool) error {
	n := len(key)
	if dir {
		n++
	}
	if n == 0 || n > 255 {
		return fmt.Errorf("directory %s holds a name of %d bytes", rel, len(key))
	}
	last := len(d.blocks) - 1
	if last < 0 || len(d.blocks[last])+1+n > cap(d.blocks[last]) {
		if len(d.blocks) == 1<<(32-arenaShift) {
			return fmt.Errorf("directory %s is too large to list", rel)
		}
		size := 4 << 10 // small directories are common: grow to arenaBlock
		if last >= 0 {
			size = min(arenaBlock, 2*cap(d.blocks[last]))
		}
		d.blocks = append(d.blocks, make([]byte, 0, size))
		last++
	}
	b := d.blocks[last]
	d.ents = append(d.ents, uint32(last)<<arenaShift|uint32(len(b)))
	b = append(b, byte(n))
	b = append(b, key...)
	if dir {
		b = append(b, '/')
	}
	d.blocks[last] = b
	return nil
}

// name returns entry i's file name in the directory.
func (d *dirList) name(i int) string {
	k := string(d.key(i))
	if d.isDir(i) {
		return strings.TrimSuffix(k, "/") + dirSuffix
	}
	return k + metaSuffix
}

func (d *dirList) size() int {
	n := 4 * cap(d.ents)
	for _, b := range d.blocks {
		n += cap(b)
	}
	return n
}

// firstAfter returns the index of the first entry holding an ID after rel
// (the marker without the directory's prefix): the first key after rel,
// or the directory just before it when rel is inside that directory.
func (d *dirList) firstAfter(rel string) int {
	r := []byte(rel)
	i, _ := slices.BinarySearchFunc(d.ents, r, func(e uint32, t []byte) int {
		if bytes.Compare(d.at(e), t) <= 0 {
			return -1
		}
		return 1
	})
	if i > 0 && d.isDir(i-1) && bytes.HasPrefix(r, d.key(i-1)) {
		i--
	}
	return i
}

// listCache holds the listings of recently listed directories.
type listCache struct {
	mu    sync.Mutex
	dirs  map[string]*dirList // by directory, relative to the root
	gen   uint64              // bumped by every invalidation
	reads int                 // directories read, for tests
}

// invalidate drops the listings of dir and of every directory above it: a
// change to dir's entries may add or remove an entry in each of them.
func (c *listCache) invalidate(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k := range c.dirs {
		if k == dir || strings.HasPrefix(dir, k+string(filepath.Separator)) || strings.HasPrefix(k, dir+string(filepath.Separator)) {
			delete(c.dirs, k)
		}
	}
}

// dirList returns the sorted listable entries of directory rel, from the
// cache when the directory has not changed since they were read.
func (s *Store) dirList(rel string) (*dirList, error) {
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, unsafef("%s is not a directory", rel)
	}
	c := &s.lists
	now := time.Now()
	c.mu.Lock()
	for k, d := range c.dirs {
		if now.Sub(d.used) > cacheIdle {
			delete(c.dirs, k)
		}
	}
	if d := c.dirs[rel]; d != nil && d.trusted && d.mod.Equal(fi.ModTime()) && d.fileNum == fileNumber(fi) {
		d.used = now
		c.mu.Unlock()
		return d, nil
	}
	gen := c.gen
	c.reads++
	c.mu.Unlock()

	d, err := s.readList(rel)
	if err != nil {
		return nil, err
	}
	d.mod, d.fileNum, d.used = fi.ModTime(), fileNumber(fi), now
	d.trusted = fi.ModTime().Before(now.Add(-racyWindow))
	if !d.trusted || d.len() < cacheMinEntries {
		return d, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return d, nil // changed by this store while it was read
	}
	if c.dirs == nil {
		c.dirs = map[string]*dirList{}
	}
	c.dirs[rel] = d
	c.evict(rel)
	return d, nil
}

// evict drops the least recently used listings, other than keep, while
// the cache is over its bounds. c.mu is held.
func (c *listCache) evict(keep string) {
	for {
		total := 0
		oldest := ""
		for k, d := range c.dirs {
			total += d.size()
			if k != keep && (oldest == "" || d.used.Before(c.dirs[oldest].used)) {
				oldest = k
			}
		}
		if oldest == "" || (len(c.dirs) <= cacheMaxDirs && total <= cacheBudget) {
			return
		}
		delete(c.dirs, oldest)
	}
}

// readList reads directory rel a chunk at a time, keeping the keys of the
// entries a listing shows — content directories and sidecars, never a
// symbolic link — in arena blocks, and sorts them.
func (s *Store) readList(rel string) (*dirList, error) {
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &dirList{}
	err = s.readNames(f, rel, func(name []byte, typ fs.FileMode) error {
		var key []byte
		dir := false
		switch {
		case typ&fs.ModeSymlink != 0:
			return nil // never an item: see files.go
		case typ.IsDir() && bytes.HasSuffix(name, []byte(dirSuffix)):
			key, dir = name[:len(name)-len(dirSuffix)], true
		case typ.IsRegular() && bytes.HasSuffix(name, []byte(metaSuffix)):
			key = name[:len(name)-len(metaSuffix)]
		default:
			return nil
		}
		return d.add(rel, key, dir)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(d.ents, func(a, b uint32) int { return bytes.Compare(d.at(a), d.at(b)) })
	return d, nil
}
