package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// smallIndex makes listings spill every few entries, merge in several
// passes and keep few keys, so that small directories cross every chunk,
// merge and sparse-index boundary.
func smallIndex(t *testing.T) {
	chunk, fanIn, stride := spillChunk, mergeFanIn, sparseStride
	spillChunk, mergeFanIn, sparseStride = 200, 3, 4
	t.Cleanup(func() { spillChunk, mergeFanIn, sparseStride = chunk, fanIn, stride })
}

// spillStore makes a store whose listings spill to a directory of their
// own, and returns it, its space "flat" directory and the spill directory.
func spillStore(t *testing.T) (*Store, string, string) {
	t.Helper()
	spill := t.TempDir()
	s, err := New(t.TempDir(), WithListSpillDir(spill))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateSpace(context.Background(), "flat"); err != nil {
		t.Fatal(err)
	}
	return s, filepath.Join(s.Root(), "flat"), spill
}

// openSpills counts this process's open files in dir (unlinked or not).
func openSpills(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatalf("counting open files: %v", err) // Linux always has it: a real failure
		}
		t.Skip("no /proc/self/fd on this system")
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			n++
		}
	}
	return n
}

// hostileTree fills dir with items whose names hold a newline, bytes that
// are not UTF-8, bytes sorting before '/' and 255-byte file names, and
// nested directories, and returns every ID sorted.
func hostileTree(t *testing.T, dir string) []string {
	t.Helper()
	long := strings.Repeat("z", 255-len(metaSuffix))
	longDir := strings.Repeat("y", 255-len(dirSuffix))
	names := []string{"a", "a-", "a.", "a!", "a\n", "a\nb", "\xff", "\xfe\xff", "é", long, "0"}
	for i := range 120 {
		names = append(names, fmt.Sprintf("item-%03d", i), fmt.Sprintf("a%03d\xc3", i))
	}
	var all []string
	for _, n := range names {
		touch(t, filepath.Join(dir, n+metaSuffix))
		all = append(all, n)
	}
	for _, d := range []string{"a", "a\n", longDir, "item-050"} {
		p := filepath.Join(dir, d+dirSuffix)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			touch(t, filepath.Join(p, fmt.Sprintf("%02d\n%s", i, metaSuffix)))
			all = append(all, fmt.Sprintf("%s/%02d\n", d, i))
		}
	}
	slices.Sort(all)
	return all
}

// wantPage is the page after marker m of a sorted list of every ID.
func wantPage(all []string, m string, limit int) []string {
	i, _ := slices.BinarySearch(all, m)
	if i < len(all) && all[i] == m {
		i++
	}
	want := all[i:min(i+limit, len(all))]
	if len(want) == 0 {
		return nil
	}
	return want
}

// Listings from indexes on disk page like a sorted list of every ID, for
// markers before, inside and after the listing, across every chunk, merge
// pass and sparse key, with names of every byte a name may hold.
func TestSpilledListingPagesLikeASortedList(t *testing.T) {
	smallIndex(t)
	s, dir, spill := spillStore(t)
	all := hostileTree(t, dir)
	old := time.Now().Add(-time.Hour)
	age(t, dir, old)
	for _, d := range []string{"a", "a\n", strings.Repeat("y", 253), "item-050"} {
		age(t, filepath.Join(dir, d+dirSuffix), old)
	}
	ctx := context.Background()

	var got []string
	for id, err := range storage.Walk(ctx, s, "flat", "", 7) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("walk:\n got %q\nwant %q", got, all)
	}
	if d := s.lists.dirs["flat"]; d == nil || d.idx == nil || d.idx.n != 120*2+11+4 {
		t.Fatalf("the space's listing is not an index on disk of 255 entries: %+v", d)
	}
	if ents, err := os.ReadDir(spill); err != nil || len(ents) != 0 {
		t.Fatalf("spill directory holds %v (%v), want nothing: the files are unlinked", ents, err)
	}

	markers := []string{"", "\x01", "0", "0\x00", "a", "a\n", "a\n/", "a\n/05", "a\n/99", "a\nb", "a/", "a/00\n",
		"a/29\n", "a/3", "a-", "a0", "a050\xc3", "a050\xc4", "item-", "item-050", "item-050/", "item-050/1",
		"item-0500", "y", strings.Repeat("y", 253) + "/", "z", strings.Repeat("z", 254), "\xff", "\xff\xff"}
	for i, id := range all {
		if i%5 == 0 {
			markers = append(markers, id)
		}
	}
	for _, m := range markers {
		for _, limit := range []int{1, 4, 9} {
			got, _, err := s.ListContent(ctx, "flat", m, limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantPage(all, m, limit); !slices.Equal(got, want) {
				t.Fatalf("ListContent(after %q, %d):\n got %q\nwant %q", m, limit, got, want)
			}
		}
	}
	if r := s.dirReads(); r != 5 {
		t.Errorf("%d pages read directories %d times, want each of the 5 once", len(markers)*3, r)
	}
}

// A directory changed between pages is read again: the next page shows
// the change.
func TestSpilledListingSeesAChangeBetweenPages(t *testing.T) {
	smallIndex(t)
	s, dir, _ := spillStore(t)
	for i := range 300 {
		touch(t, filepath.Join(dir, fmt.Sprintf("item-%05d%s", i, metaSuffix)))
	}
	age(t, dir, time.Now().Add(-time.Hour))
	page(t, s, "item-00100", 2, []string{"item-00101", "item-00102"})
	touch(t, filepath.Join(dir, "item-00102a"+metaSuffix))
	if err := os.Remove(filepath.Join(dir, "item-00103"+metaSuffix)); err != nil {
		t.Fatal(err)
	}
	page(t, s, "item-00102", 2, []string{"item-00102a", "item-00104"})
	if r := s.dirReads(); r != 2 {
		t.Errorf("read the directory %d times, want 2", r)
	}
}

// An index is closed — its unlinked file released — when its listing is
// dropped: at the end of the page when it is not kept (a directory
// written within the racy window), by a write of the store, by the
// cache's bound, by Close.
func TestSpilledListingFilesAreClosed(t *testing.T) {
	smallIndex(t)
	s, dir, spill := spillStore(t)
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	for d := range cacheMaxDirs + 2 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d%s", d, dirSuffix))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			touch(t, filepath.Join(p, fmt.Sprintf("%02d%s", i, metaSuffix)))
		}
	}
	for i := range 20 {
		touch(t, filepath.Join(dir, fmt.Sprintf("e%02d%s", i, metaSuffix)))
	}
	page(t, s, "d00/05", 1, []string{"d00/06"})
	if n := openSpills(t, spill); n != 0 {
		t.Fatalf("%d index files open after a page of directories written just now, want 0", n)
	}
	for d := range cacheMaxDirs + 2 {
		age(t, filepath.Join(dir, fmt.Sprintf("d%02d%s", d, dirSuffix)), old)
	}
	age(t, dir, old)
	page(t, s, "d00/05", 1, []string{"d00/06"})
	if n := openSpills(t, spill); n != 2 {
		t.Fatalf("%d index files open after listing 2 directories, want 2", n)
	}
	// A write to d00 drops d00 and the space, whose listings it changes.
	if _, err := s.Put(ctx, "flat", "d00/x", strings.NewReader("x"), storage.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	if n := openSpills(t, spill); n != 0 {
		t.Fatalf("%d index files open after a write dropped their listings, want 0", n)
	}
	// A walk of every directory keeps no more than the cache's bound.
	n := 0
	for _, err := range storage.Walk(ctx, s, "flat", "", 3) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != (cacheMaxDirs+2)*40+20+1 {
		t.Fatalf("walked %d items", n)
	}
	if n := openSpills(t, spill); n == 0 || n > cacheMaxDirs {
		t.Fatalf("%d index files open after a walk, want 1 to %d", n, cacheMaxDirs)
	}
	s.Close()
	if n := openSpills(t, spill); n != 0 {
		t.Fatalf("%d index files open after Close, want 0", n)
	}
	if ents, _ := os.ReadDir(spill); len(ents) != 0 {
		t.Fatalf("spill directory holds %v", ents)
	}
}

// A spill that fails — no file, a file that cannot be written, a failed
// merge pass — fails the listing, leaves no file open, and a later
// listing that can spill is whole.
func TestFailedSpillFailsTheListing(t *testing.T) {
	smallIndex(t)
	s, dir, spill := spillStore(t)
	var all []string
	for i := range 300 {
		touch(t, filepath.Join(dir, fmt.Sprintf("item-%05d%s", i, metaSuffix)))
		all = append(all, fmt.Sprintf("item-%05d", i))
	}
	age(t, dir, time.Now().Add(-time.Hour))
	create := createSpill
	t.Cleanup(func() { createSpill = create })
	boom := errors.New("disk full")
	for name, fail := range map[string]func(call int) (*spillFile, error){
		"create": func(int) (*spillFile, error) { return nil, boom },
		"write": func(int) (*spillFile, error) {
			f, err := create(spill)
			if err != nil {
				return nil, err
			}
			ro, err := os.Open("/dev/null") // writes fail
			f.close()
			return &spillFile{File: ro}, err
		},
		"merge pass": func(call int) (*spillFile, error) {
			if call == 2 {
				return nil, boom
			}
			return create(spill)
		},
		"second merge pass": func(call int) (*spillFile, error) {
			if call == 3 {
				return nil, boom
			}
			return create(spill)
		},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			createSpill = func(string) (*spillFile, error) { calls++; return fail(calls) }
			ids, _, err := s.ListContent(context.Background(), "flat", "", 10)
			if err == nil {
				t.Fatalf("listing with a failing spill returned %q and no error", ids)
			}
			if n := openSpills(t, spill); n != 0 {
				t.Fatalf("%d spill files open after the failure", n)
			}
			createSpill = create
			page(t, s, "item-00149", 3, all[150:153])
			s.lists.close()
			if n := openSpills(t, spill); n != 0 {
				t.Fatalf("%d spill files open after the listings were dropped", n)
			}
		})
	}
}

// heapInUse is the heap's live bytes after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// What a store holds for the listing of a large flat directory does not
// grow with the directory: 100,000 names (3.9 MiB of keys) cost less
// than 1 MiB of heap while the walk is under way and after it.
func TestLargeListingMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 100,000 files")
	}
	const n = 100_000
	const name = "item-with-a-name-of-forty-bytes-%06d"
	s, dir := flatSpace(t, 0)
	files := t.TempDir()
	for i := range n {
		one := filepath.Join(files, strconv.Itoa(i/50_000)) // a file has at most 65,000 links on ext4
		if i%50_000 == 0 {
			touch(t, one)
		}
		if err := os.Link(one, filepath.Join(dir, fmt.Sprintf(name, i)+metaSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	age(t, dir, time.Now().Add(-time.Hour))
	const bound = 1 << 20
	base := heapInUse()
	i := 0
	for id, err := range storage.Walk(context.Background(), s, "flat", "", 1000) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(name, i); id != want {
			t.Fatalf("item %d is %q, want %q", i, id, want)
		}
		if i == n/2 {
			used := heapInUse() - base
			t.Logf("halfway through the walk: %d bytes of heap", used)
			if used > bound {
				t.Errorf("halfway through the walk the listing holds %d bytes of heap, want at most %d", used, bound)
			}
		}
		i++
	}
	if i != n {
		t.Fatalf("walked %d items, want %d", i, n)
	}
	used := heapInUse() - base
	t.Logf("after the walk: %d bytes of heap", used)
	if used > bound {
		t.Errorf("after the walk the store holds %d bytes of heap for its listing, want at most %d", used, bound)
	}
	runtime.KeepAlive(s)
}
