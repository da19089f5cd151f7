package fsstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

func put(t *testing.T, s *fsstore.Store, space, id, body string) {
	t.Helper()
	if _, err := s.Put(context.Background(), space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
}

func countVersions(t *testing.T, s *fsstore.Store, space, id string) int {
	t.Helper()
	vs, err := s.Versions(context.Background(), space, id)
	if err != nil {
		t.Fatal(err)
	}
	return len(vs)
}

// trashFiles counts the files under the store's trash directory.
func trashFiles(t *testing.T, root string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(root, ".mill-trash"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestTrashExpiresAfterRetention runs in a synctest bubble: its Sleeps move
// the bubble's clock, which the store reads, at once.
func TestTrashExpiresAfterRetention(t *testing.T) {
	synctest.Test(t, testTrashExpiresAfterRetention)
}

func testTrashExpiresAfterRetention(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := fsstore.New(root, fsstore.WithRetention(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSpace(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "sp", "a", "first")
	put(t, s, "sp", "a", "second") // keeps "first"
	time.Sleep(47 * time.Hour)
	if err := s.Delete(ctx, "sp", "a"); err != nil { // keeps "second"
		t.Fatal(err)
	}
	if n := countVersions(t, s, "sp", "a"); n != 2 {
		t.Fatalf("within the retention: %d versions, want 2", n)
	}
	time.Sleep(2 * time.Hour) // "first" is 49 h old, "second" 2 h
	vs, err := s.Versions(ctx, "sp", "a")
	if err != nil || len(vs) != 1 || vs[0].Reason != storage.ReplacedByDelete {
		t.Fatalf("after the first expired: %+v, %v; want only the deleted version", vs, err)
	}
	n, err := s.PurgeTrash(ctx)
	if err != nil || n != 1 {
		t.Fatalf("PurgeTrash: %d, %v; want 1 removed", n, err)
	}
	if f := trashFiles(t, root); f != 2 {
		t.Errorf("after the purge: %d trash files, want 2 (one sidecar, one blob)", f)
	}
	// A write more than an hour after the last purge purges too.
	time.Sleep(47 * time.Hour)
	put(t, s, "sp", "b", "x")
	put(t, s, "sp", "b", "y")
	if f := trashFiles(t, root); f != 2 {
		t.Errorf("after a write past the retention: %d trash files, want 2 (only b's)", f)
	}
	if n := countVersions(t, s, "sp", "a"); n != 0 {
		t.Errorf("a: %d versions after they all expired", n)
	}
	// Opening the store purges as well.
	time.Sleep(49 * time.Hour)
	if _, err := fsstore.New(root, fsstore.WithRetention(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if f := trashFiles(t, root); f != 0 {
		t.Errorf("after reopening past the retention: %d trash files, want 0", f)
	}
}

// TestTrashRefusesTampering: a trash entry moved to another item's
// directory, or a symlinked trash directory, is never restored through.
func TestTrashRefusesTampering(t *testing.T) {
	ctx := context.Background()
	s, root, outside := storeBesideOutside(t, "sp")
	put(t, s, "sp", "a", "secret of a")
	if err := s.Delete(ctx, "sp", "a"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "sp", "b", "b's own")
	if err := s.Delete(ctx, "sp", "b"); err != nil {
		t.Fatal(err)
	}
	// Move a's entry into b's directory (and b's out): b has no version
	// of its own now, and a's is not b's.
	hashDir := func(id string) string {
		sum := sha256.Sum256([]byte(id))
		return filepath.Join(root, ".mill-trash", "sp", hex.EncodeToString(sum[:]))
	}
	aDir, bDir := hashDir("a"), hashDir("b")
	if countVersions(t, s, "sp", "a") != 1 || countVersions(t, s, "sp", "b") != 1 {
		t.Fatal("want one version each before tampering")
	}
	os.RemoveAll(bDir)
	if err := os.Rename(aDir, bDir); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if n := countVersions(t, s, "sp", id); n != 0 {
			t.Errorf("Versions(%s) after moving entries: %d, want 0", id, n)
		}
	}
	// A symlinked trash space directory is refused.
	os.RemoveAll(filepath.Join(root, ".mill-trash", "sp"))
	if err := os.Symlink(outside, filepath.Join(root, ".mill-trash", "sp")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, outside)
	put(t, s, "sp", "c", "one")
	if _, err := s.Put(ctx, "sp", "c", strings.NewReader("two"), storage.PutOptions{Size: 3}); err == nil {
		t.Error("an overwrite whose trash directory is a symlink succeeded")
	}
	if err := s.Delete(ctx, "sp", "c"); err == nil {
		t.Error("a delete whose trash directory is a symlink succeeded")
	}
	if _, err := s.Versions(ctx, "sp", "c"); err == nil {
		t.Error("Versions through a symlinked trash directory succeeded")
	}
	if _, err := s.Head(ctx, "sp", "c"); err != nil {
		t.Errorf("the item whose delete was refused is gone: %v", err)
	}
	after := tree(t, outside)
	if len(before) != len(after) {
		t.Errorf("outside changed: %q → %q", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("outside %s changed", k)
		}
	}
}
