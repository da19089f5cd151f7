package fsstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// flatSpace makes a store with space "flat" holding n items named
// item-00000 … written as sidecar files directly (a listing reads names
// only), and returns the store and the space's directory.
func flatSpace(t testing.TB, n int) (*Store, string) {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateSpace(context.Background(), "flat"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Root(), "flat")
	for i := range n {
		touch(t, filepath.Join(dir, fmt.Sprintf("item-%05d%s", i, metaSuffix)))
	}
	return s, dir
}

func touch(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// age sets dir's modification time to at, as a directory nobody wrote
// for a while has (or, at a recent time, as a coarse clock leaves it).
func age(t testing.TB, dir string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
}

func (s *Store) dirReads() int {
	s.lists.mu.Lock()
	defer s.lists.mu.Unlock()
	return s.lists.reads
}

// page lists one page and fails the test unless it is exactly want.
func page(t *testing.T, s *Store, after string, limit int, want []string) {
	t.Helper()
	got, _, err := s.ListContent(context.Background(), "flat", after, limit)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListContent(after %q, %d):\n got %q\nwant %q", after, limit, got, want)
	}
}

func TestWalkReadsAFlatDirectoryOnce(t *testing.T) {
	s, dir := flatSpace(t, 2000)
	age(t, dir, time.Now().Add(-time.Hour))
	n := 0
	for id, err := range storage.Walk(context.Background(), s, "flat", "", 50) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("item-%05d", n); id != want {
			t.Fatalf("item %d: %q, want %q", n, id, want)
		}
		n++
	}
	if n != 2000 {
		t.Fatalf("walked %d items, want 2000", n)
	}
	if r := s.dirReads(); r != 1 {
		t.Errorf("a walk of 40 pages read the directory %d times, want 1", r)
	}
}

func TestListingSeesAChangeBehindTheStore(t *testing.T) {
	s, dir := flatSpace(t, 200)
	age(t, dir, time.Now().Add(-time.Hour))
	page(t, s, "", 2, []string{"item-00000", "item-00001"})
	// Another process adds an item after the marker and removes the next.
	touch(t, filepath.Join(dir, "item-00001a"+metaSuffix))
	if err := os.Remove(filepath.Join(dir, "item-00002"+metaSuffix)); err != nil {
		t.Fatal(err)
	}
	page(t, s, "item-00001", 2, []string{"item-00001a", "item-00003"})
}

// A change in the same tick of the clock as the read leaves the
// directory's time as it was: a listing read that recently is not used
// again.
func TestListingReadWithinTheRacyWindowIsReadAgain(t *testing.T) {
	s, dir := flatSpace(t, 200)
	at := time.Now()
	age(t, dir, at)
	page(t, s, "", 2, []string{"item-00000", "item-00001"})
	touch(t, filepath.Join(dir, "item-00001a"+metaSuffix))
	age(t, dir, at)
	page(t, s, "item-00001", 2, []string{"item-00001a", "item-00002"})
}

// The store's own writes drop the listings they change, even where the
// directory's time does not show them.
func TestListingSeesTheStoresOwnWrites(t *testing.T) {
	s, dir := flatSpace(t, 200)
	at := time.Now().Add(-time.Hour)
	age(t, dir, at)
	ctx := context.Background()
	page(t, s, "", 2, []string{"item-00000", "item-00001"})
	if _, err := s.Put(ctx, "flat", "item-00001a", strings.NewReader("x"), storage.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	age(t, dir, at)
	page(t, s, "item-00001", 2, []string{"item-00001a", "item-00002"})
	if err := s.Delete(ctx, "flat", "item-00001a"); err != nil {
		t.Fatal(err)
	}
	age(t, dir, at)
	page(t, s, "item-00001", 2, []string{"item-00002", "item-00003"})
	// An item in a new directory adds the directory to the listing.
	if _, err := s.Put(ctx, "flat", "item-00002/x", strings.NewReader("x"), storage.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	age(t, dir, at)
	page(t, s, "item-00001", 2, []string{"item-00002", "item-00002/x"})
}

// Pages from kept listings of nested directories start where a sorted
// list of every ID says, for markers that are IDs and markers that are not.
func TestKeptListingsPageLikeASortedList(t *testing.T) {
	s, dir := flatSpace(t, 0)
	var all []string
	for _, d := range []string{"a", "a-b", "a/b"} {
		p := filepath.Join(dir, strings.ReplaceAll(d, "/", dirSuffix+"/")+dirSuffix)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 80 {
			touch(t, filepath.Join(p, fmt.Sprintf("%02d%s", i, metaSuffix)))
			all = append(all, fmt.Sprintf("%s/%02d", d, i))
		}
	}
	for i := range 80 {
		touch(t, filepath.Join(dir, fmt.Sprintf("a%02d%s", i, metaSuffix)))
		all = append(all, fmt.Sprintf("a%02d", i))
	}
	slices.Sort(all)
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{"a.d/b.d", "a.d", "a-b.d", ""} {
		age(t, filepath.Join(dir, d), old)
	}
	markers := []string{"", "a", "a/", "a/0", "a/b", "a/b/", "a/b/5", "a/b0", "a-", "a-b/79", "a.", "a1", "a79", "b"}
	for _, id := range all {
		if len(id)%3 == 0 {
			markers = append(markers, id)
		}
	}
	for _, m := range markers {
		i, _ := slices.BinarySearch(all, m)
		if i < len(all) && all[i] == m {
			i++
		}
		want := all[i:min(i+7, len(all))]
		if len(want) == 0 {
			want = nil
		}
		page(t, s, m, 7, want)
	}
	if r := s.dirReads(); r > 4 {
		t.Errorf("%d pages read directories %d times, want each of the 4 once", len(markers), r)
	}
}

// A file named exactly ".m" or a directory named exactly ".d" has an empty
// segment, so fsstore never wrote it (IDs have no empty segment): a
// listing passes over it like any other foreign file, instead of failing
// the whole directory or listing an ID that starts with '/'.
func TestListingPassesOverEmptySegmentNames(t *testing.T) {
	s, dir := flatSpace(t, 3)
	touch(t, filepath.Join(dir, metaSuffix))
	if err := os.MkdirAll(filepath.Join(dir, dirSuffix, "x.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, dirSuffix, "inner"+metaSuffix))
	touch(t, filepath.Join(dir, dirSuffix, "x.d", "deep"+metaSuffix))
	page(t, s, "", 10, []string{"item-00000", "item-00001", "item-00002"})
}
