package wiring

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// An fs store opened from the registry sorts a large directory's listing
// in its listSpillDir; one without the setting, in os.TempDir(). The
// index of a listing stays open, unlinked, while the listing is kept:
// the process's open files show where it was made.
func TestFSStoreSpillsToItsListSpillDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files through /proc/self/fd")
	}
	base := t.TempDir()
	tmp, spill := filepath.Join(base, "tmp"), filepath.Join(base, "spill")
	for _, d := range []string{tmp, spill} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp) // os.TempDir()
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindFS, Root: filepath.Join(base, "s1"), ListSpillDir: spill},
		{ID: "2", Kind: storage.KindFS, Root: filepath.Join(base, "s2")},
	}}}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	opener := NewOpener(reg, nil, false)
	for _, c := range []struct{ store, dir, other string }{{"1", spill, tmp}, {"2", tmp, spill}} {
		p, err := opener.Open(t.Context(), "acme", c.store)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CreateSpace(t.Context(), "flat"); err != nil {
			t.Fatal(err)
		}
		// 4,200 250-byte keys: with a length byte and 4 bytes each, 1.07
		// MB, more than a listing holds in memory (1 MiB). Only the names
		// are listed: empty sidecars do.
		dir := filepath.Join(reg.Accounts[0].Store(c.store).Root, "flat")
		for i := range 4200 {
			name := fmt.Sprintf("%06d%s.m", i, strings.Repeat("x", 244))
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-time.Hour) // a listing of a directory unchanged for a while is kept
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		ids, _, err := p.ListContent(t.Context(), "flat", "", 2)
		if err != nil || len(ids) != 2 || !strings.HasPrefix(ids[0], "000000x") {
			t.Fatalf("store %s: ListContent = %q, %v", c.store, ids, err)
		}
		if n := openIn(t, c.dir); n != 1 {
			t.Fatalf("store %s: %d files open in %s after a large listing, want its index", c.store, n, c.dir)
		}
		if n := openIn(t, c.other); n != 0 {
			t.Fatalf("store %s: %d files open in %s, want none", c.store, n, c.other)
		}
		if ents, err := os.ReadDir(c.dir); err != nil || len(ents) != 0 {
			t.Fatalf("store %s: %s holds %v (%v): spills are unlinked", c.store, c.dir, ents, err)
		}
		if err := p.(interface{ Close() error }).Close(); err != nil {
			t.Fatal(err)
		}
		if n := openIn(t, c.dir); n != 0 {
			t.Fatalf("store %s: %d files open in %s after Close", c.store, n, c.dir)
		}
	}
}

// openIn counts the files this process holds open in dir.
func openIn(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if to, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && filepath.Dir(to) == dir {
			n++
		}
	}
	return n
}
