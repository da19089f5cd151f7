// Package blobtest is the conformance suite of blob.Store: every
// implementation runs it (blob.Store's contract, in pkg/blob's package
// comment), with a Harness in the entry shape of Mill's suites.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/blob"
)

// Harness is the implementation under test: New makes what one subtest
// runs on, the other fields are capability flags.
type Harness struct {
	// New returns a fresh, empty store made with o for one subtest; it
	// registers its own cleanup with t.
	New func(t *testing.T, o *blob.Options) Fixture
	// ManyKeys is how many blobs the suite deletes in one call and lists
	// (0: 25); above 1000 it takes S3's paged listing and batched delete.
	ManyKeys int
}

// Fixture is one fresh store and the hooks that reach behind it.
type Fixture struct {
	Store blob.Store
	// Plant, when set, writes data under name behind the store's back:
	// name is relative to the store's root or prefix and is no key
	// blob.CheckKey accepts ("sp ace", "x/../y"…, or "" for a sibling of
	// the root or prefix itself: "../outside"). The suite checks that List
	// leaves such blobs out and that no key reaches them.
	Plant func(t *testing.T, name string, data []byte)
}

// Run runs the whole suite, each subtest on a fresh store.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("blobtest: Harness.New is nil")
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"GetPutList", testGetPutList},
		{"TooLarge", testTooLarge},
		{"Delete", testDelete},
		{"HostileKeys", testHostileKeys},
		{"Planted", testPlanted},
		{"Concurrent", testConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

func put(t *testing.T, s blob.Store, key, v string) {
	t.Helper()
	if err := s.Put(context.Background(), key, []byte(v)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func wantList(t *testing.T, s blob.Store, prefix string, want ...string) {
	t.Helper()
	got, err := s.List(context.Background(), prefix)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("list %q: %q, %v; want %q", prefix, got, err, want)
	}
}

func testGetPutList(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t, nil).Store
	if _, err := s.Get(ctx, "checkpoint"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get of a missing blob: %v, want ErrNotFound", err)
	}
	wantList(t, s, "")
	for k, v := range map[string]string{"checkpoint": "a", "checkpoints/00000000000000000002": "b",
		"checkpoints/00000000000000000001": "c", "tile/8/0/000.p/3": "d", "dup.json.journal/0000000000000001/0000000001": "e"} {
		put(t, s, k, v)
	}
	put(t, s, "checkpoint", "replaced")
	for k, v := range map[string]string{"checkpoint": "replaced", "tile/8/0/000.p/3": "d"} {
		if got, err := s.Get(ctx, k); err != nil || string(got) != v {
			t.Fatalf("get %s: %q, %v; want %q", k, got, err, v)
		}
	}
	wantList(t, s, "checkpoints/", "checkpoints/00000000000000000001", "checkpoints/00000000000000000002")
	wantList(t, s, "checkpoint", "checkpoint", "checkpoints/00000000000000000001", "checkpoints/00000000000000000002")
	wantList(t, s, "dup.json.journal/", "dup.json.journal/0000000000000001/0000000001")
	wantList(t, s, "nothing/")
	wantList(t, s, "", "checkpoint", "checkpoints/00000000000000000001", "checkpoints/00000000000000000002",
		"dup.json.journal/0000000000000001/0000000001", "tile/8/0/000.p/3")
	put(t, s, "empty", "")
	if got, err := s.Get(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("an empty blob: %q, %v", got, err)
	}
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18)
	if err := s.Put(ctx, "tile/8/data/000", big); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "tile/8/data/000")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("a 1 MiB blob did not read back: %d bytes, %v", len(got), err)
	}
	// What Get returns and what Put was given are the caller's.
	got[0], big[1] = 9, 9
	if again, err := s.Get(ctx, "tile/8/data/000"); err != nil || again[0] != 0 || again[1] != 1 {
		t.Fatalf("the stored blob changed with the caller's slices: %v", err)
	}
}

func testTooLarge(t *testing.T, h Harness) {
	ctx := context.Background()
	const max = 1000
	s := h.New(t, &blob.Options{MaxSize: max}).Store
	put(t, s, "at", string(make([]byte, max)))
	put(t, s, "over", string(make([]byte, max+1)))
	if got, err := s.Get(ctx, "at"); err != nil || len(got) != max {
		t.Fatalf("a blob of the bound: %d bytes, %v", len(got), err)
	}
	if got, err := s.Get(ctx, "over"); !errors.Is(err, blob.ErrTooLarge) || errors.Is(err, blob.ErrNotFound) || got != nil {
		t.Fatalf("a blob over the bound: %d bytes, %v; want ErrTooLarge", len(got), err)
	}
}

func testDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t, nil).Store
	n := h.ManyKeys
	if n <= 0 {
		n = 25
	}
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("j/%04d/%06d", i%3, i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for _, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- s.Put(ctx, k, []byte(k))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, "keep", "k")
	slices.Sort(keys)
	wantList(t, s, "j/", keys...)
	if err := s.Delete(ctx, "never-written"); err != nil {
		t.Fatalf("delete of a missing blob: %v", err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatalf("delete of no keys: %v", err)
	}
	if err := s.Delete(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, keys[0]); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, append(keys, "never-written")...); err != nil {
		t.Fatalf("delete of %d blobs: %v", len(keys)+1, err)
	}
	wantList(t, s, "", "keep")
	// A key whose directory (or prefix) a delete emptied is written again.
	put(t, s, keys[1], "again")
	wantList(t, s, "", keys[1], "keep")
}

var hostile = []string{"", "../x", "a/../../x", "/abs", "a//b", "a/", ".", "..", "sp ace", "a\\b", "a\x00b", "é", string(make([]byte, blob.MaxKeyLen+1))}

func testHostileKeys(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t, nil).Store
	for _, k := range hostile {
		if err := s.Put(ctx, k, []byte("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("put %q: %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("get %q: %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, "fine", k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("delete %q: %v, want ErrInvalidKey", k, err)
		}
	}
	put(t, s, "fine", "f")
	// A delete with one hostile key deletes nothing.
	if err := s.Delete(ctx, "fine", "../fine"); err == nil {
		t.Error("delete with a hostile key succeeded")
	}
	wantList(t, s, "", "fine")
	for _, p := range []string{"../", "/", "a//", "sp ace/"} {
		wantList(t, s, p)
	}
}

func testPlanted(t *testing.T, h Harness) {
	ctx := context.Background()
	f := h.New(t, nil)
	if f.Plant == nil {
		t.Skip("the store cannot be written behind its back")
	}
	put(t, f.Store, "x/y", "mine")
	for _, name := range []string{"sp ace", "x/sp ace", "x/é", ""} {
		f.Plant(t, name, []byte("planted"))
	}
	wantList(t, f.Store, "", "x/y")
	wantList(t, f.Store, "x/", "x/y")
	if err := f.Store.Delete(ctx, "x/y"); err != nil {
		t.Fatal(err)
	}
	wantList(t, f.Store, "")
}

func testConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t, nil).Store
	values := make([][]byte, 8)
	for i := range values {
		values[i] = bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
	}
	var wg sync.WaitGroup
	for _, v := range values {
		wg.Go(func() {
			if err := s.Put(ctx, "same", v); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if got, err := s.Get(ctx, "same"); err == nil && !slices.ContainsFunc(values, func(w []byte) bool { return bytes.Equal(w, got) }) {
				t.Errorf("a read during writes saw %d bytes that no write wrote whole", len(got))
			} else if err != nil && !errors.Is(err, blob.ErrNotFound) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "same")
	if err != nil || !slices.ContainsFunc(values, func(w []byte) bool { return bytes.Equal(w, got) }) {
		t.Fatalf("after concurrent writes: %d bytes, %v; want one write whole", len(got), err)
	}
	wantList(t, s, "", "same")
}

// Keys returns every key of s, failing t when s cannot list them: for the
// tests of a blob.Store's users ("no checkpoint left").
func Keys(t testing.TB, s blob.Store) []string {
	t.Helper()
	keys, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatalf("list blobs: %v", err)
	}
	return keys
}
