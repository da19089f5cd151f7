package fsstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// FuzzItemPaths checks that no space and content ID, however hostile, maps
// to a path outside its space's directory: the item's directory and its
// sidecar are strictly inside root/space, and the last path element is the
// last segment plus the sidecar suffix. Refusals wrap storage.ErrInvalidID.
func FuzzItemPaths(f *testing.F) {
	for _, s := range [][2]string{
		{"space", "a/b/c.txt"}, {"space", "../../etc/passwd"}, {"space", ".."}, {"space", "a/./b"},
		{"space", "a//b"}, {"..", "x"}, {"space", `..\..\x`}, {"space", "/abs"}, {"space", "x\x00y"},
		{"space", strings.Repeat("a", 300)}, {"space", "a.d/b"}, {"space", "%2e%2e/x"},
	} {
		f.Add(s[0], s[1])
	}
	root := filepath.Join(f.TempDir(), "root")
	s := &Store{root: root}
	f.Fuzz(func(t *testing.T, space, id string) {
		dir, meta, seg, err := s.itemPaths(space, id)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Fatalf("itemPaths(%q, %q): %v does not wrap ErrInvalidID", space, id, err)
			}
			return
		}
		spaceDir := filepath.Join(root, space)
		if filepath.Dir(spaceDir) != root {
			t.Fatalf("space %q maps to %q, not a directory directly under the root", space, spaceDir)
		}
		for _, p := range []string{dir, meta} {
			rel, err := filepath.Rel(spaceDir, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
				t.Fatalf("itemPaths(%q, %q): %q escapes %q", space, id, p, spaceDir)
			}
		}
		if meta == spaceDir || filepath.Dir(meta) != dir || filepath.Base(meta) != seg+metaSuffix {
			t.Fatalf("itemPaths(%q, %q): sidecar %q is not %q/%q", space, id, meta, dir, seg+metaSuffix)
		}
	})
}
