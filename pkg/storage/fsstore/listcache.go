package fsstore

import (
	"bytes"
	"fmt"
	"io/fs"
	"iter"
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
// the marker, a binary search and the page itself. A directory larger
// than spillChunk is kept as a sorted index on disk (listindex.go), so
// that what a listing holds in memory does not grow with the directory.

const (
	// cacheMinEntries is the size from which a directory's listing is
	// kept: a smaller one is cheaper to read again than to hold.
	cacheMinEntries = 64
	// cacheMaxDirs and cacheBudget bound the cache: at most that many
	// directories and that many bytes of memory (names and entries, or
	// the sparse keys of an index on disk); the most recent listing is
	// kept even when it alone is larger (the page being listed needed it
	// anyway).
	cacheMaxDirs = 16
	cacheBudget  = 8 << 20
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

// dirList is one directory's listable entries sorted by key: in memory,
// or in an index on disk when idx is set.
type dirList struct {
	blocks [][]byte
	ents   []uint32
	inUse  int // blocks in use (reset keeps the others for reuse)
	keyLen int // bytes of keys, with their length bytes
	idx    *diskIndex
	// The directory as it was stat'ed before the read: a listing is used
	// again only while the directory still has this time and file number.
	mod     time.Time
	fileNum uint64
	trusted bool // mod is older than the read by racyWindow
	used    time.Time
	// refs counts the listings using it; one dropped from the cache
	// closes its index when the last is done.
	refs    int
	dropped bool
}

func (d *dirList) at(e uint32) []byte {
	b := d.blocks[e>>arenaShift]
	off := e & (arenaBlock - 1)
	return b[off+1 : off+1+uint32(b[off])]
}

func (d *dirList) len() int         { return len(d.ents) }
func (d *dirList) key(i int) []byte { return d.at(d.ents[i]) }

// isDir reports whether entry i is a directory.
func (d *dirList) isDir(i int) bool { return isDirKey(d.key(i)) }

// isDirKey reports whether a key is a directory's: only directory keys
// end in '/' (a segment never holds one).
func isDirKey(k []byte) bool { return k[len(k)-1] == '/' }

// add appends an entry with the given key.
func (d *dirList) add(rel string, key []byte, dir bool) error {
	n := len(key)
	if dir {
		n++
	}
	if n == 0 || n > 255 {
		return fmt.Errorf("directory %s holds a name of %d bytes", rel, len(key))
	}
	last := d.inUse - 1
	if last < 0 || len(d.blocks[last])+1+n > cap(d.blocks[last]) {
		if d.inUse == len(d.blocks) {
			if len(d.blocks) == 1<<(32-arenaShift) {
				return fmt.Errorf("directory %s is too large to list", rel)
			}
			size := 4 << 10 // small directories are common: grow to arenaBlock
			if last >= 0 {
				size = min(arenaBlock, 2*cap(d.blocks[last]))
			}
			d.blocks = append(d.blocks, make([]byte, 0, size))
		}
		d.inUse++
		last++
	}
	b := d.blocks[last]
	d.ents = append(d.ents, uint32(last)<<arenaShift|uint32(len(b)))
	d.keyLen += 1 + n
	b = append(b, byte(n))
	b = append(b, key...)
	if dir {
		b = append(b, '/')
	}
	d.blocks[last] = b
	return nil
}

// keyName returns the file name in the directory of the entry with key k.
func keyName(k []byte) string {
	if isDirKey(k) {
		return string(k[:len(k)-1]) + dirSuffix
	}
	return string(k) + metaSuffix
}

// size is the memory the listing holds.
func (d *dirList) size() int {
	if d.idx != nil {
		return d.idx.memSize()
	}
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

// entries yields the keys from the first holding an ID after rel
// (firstAfter), or every key when all. A key is valid until the next.
func (d *dirList) entries(rel string, all bool) iter.Seq2[[]byte, error] {
	if d.idx != nil {
		return d.idx.entries(rel, all)
	}
	return func(yield func([]byte, error) bool) {
		start := 0
		if !all {
			start = d.firstAfter(rel)
		}
		for i := start; i < d.len(); i++ {
			if !yield(d.key(i), nil) {
				return
			}
		}
	}
}

// reset empties d, keeping its memory for the next chunk.
func (d *dirList) reset() {
	for i := range d.blocks {
		d.blocks[i] = d.blocks[i][:0]
	}
	d.ents, d.inUse, d.keyLen = d.ents[:0], 0, 0
}

func (d *dirList) sort() {
	slices.SortFunc(d.ents, func(a, b uint32) int { return bytes.Compare(d.at(a), d.at(b)) })
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
			c.drop(k)
		}
	}
}

// drop removes directory k's listing from the cache, closing its index
// unless a listing is still using it. c.mu is held.
func (c *listCache) drop(k string) {
	d := c.dirs[k]
	delete(c.dirs, k)
	d.dropped = true
	if d.refs == 0 && d.idx != nil {
		d.idx.close()
	}
}

// release ends a use of d that dirList returned.
func (c *listCache) release(d *dirList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.refs--
	if d.refs == 0 && d.dropped && d.idx != nil {
		d.idx.close()
	}
}

// close drops every listing (Store.Close).
func (c *listCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.dirs {
		c.drop(k)
	}
}

// dirList returns the sorted listable entries of directory rel, from the
// cache when the directory has not changed since they were read. The
// caller releases it (s.lists.release) when done.
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
			c.drop(k)
		}
	}
	if d := c.dirs[rel]; d != nil && d.trusted && d.mod.Equal(fi.ModTime()) && d.fileNum == fileNumber(fi) {
		d.used = now
		d.refs++
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
	d.refs, d.dropped = 1, true // not kept unless below
	if !d.trusted || (d.idx == nil && d.len() < cacheMinEntries) {
		return d, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return d, nil // changed by this store while it was read
	}
	if old := c.dirs[rel]; old != nil {
		c.drop(rel)
	}
	d.dropped = false
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
		c.drop(oldest)
	}
}

// readList reads directory rel a chunk at a time, keeping the keys of the
// entries a listing shows — content directories and sidecars, never a
// symbolic link — in arena blocks, and sorts them. A directory whose keys
// outgrow spillChunk is spilled a sorted chunk at a time and merged into
// an index on disk.
func (s *Store) readList(rel string) (*dirList, error) {
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &dirList{}
	var sp *spiller
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
		if len(key) == 0 {
			return nil // ".d" or ".m": an empty segment, which no ID has
		}
		if err := d.add(rel, key, dir); err != nil {
			return err
		}
		if d.keyLen+4*len(d.ents) < spillChunk {
			return nil
		}
		if sp == nil {
			sp = &spiller{dir: s.spillDir}
		}
		if err := sp.spill(d); err != nil {
			return fmt.Errorf("list directory %s: spill: %w", rel, err)
		}
		d.reset()
		return nil
	})
	if err == nil && sp != nil && d.len() > 0 {
		if err = sp.spill(d); err != nil {
			err = fmt.Errorf("list directory %s: spill: %w", rel, err)
		}
	}
	if err != nil {
		if sp != nil {
			sp.abandon()
		}
		return nil, err
	}
	if sp == nil {
		d.sort()
		return d, nil
	}
	x, err := sp.index()
	if err != nil {
		return nil, fmt.Errorf("list directory %s: merge: %w", rel, err)
	}
	return &dirList{idx: x}, nil
}
