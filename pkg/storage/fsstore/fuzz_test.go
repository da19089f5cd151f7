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
// sidecar are local paths strictly inside the space, and the last path
// element is the last segment plus the sidecar suffix. Refusals wrap
// storage.ErrInvalidID.
func FuzzItemPaths(f *testing.F) {
	for _, s := range [][2]string{
		{"space", "a/b/c.txt"}, {"space", "../../etc/passwd"}, {"space", ".."}, {"space", "a/./b"},
		{"space", "a//b"}, {"..", "x"}, {"space", `..\..\x`}, {"space", "/abs"}, {"space", "x\x00y"},
		{"space", strings.Repeat("a", 300)}, {"space", "a.d/b"}, {"space", "%2e%2e/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, space, id string) {
		dir, meta, seg, err := itemPaths(space, id)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Fatalf("itemPaths(%q, %q): %v does not wrap ErrInvalidID", space, id, err)
			}
			return
		}
		if !filepath.IsLocal(space) || strings.ContainsRune(space, filepath.Separator) {
			t.Fatalf("space %q is not one local path element", space)
		}
		for _, p := range []string{dir, meta} {
			rel, err := filepath.Rel(space, p)
			if !filepath.IsLocal(p) || err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("itemPaths(%q, %q): %q escapes %q", space, id, p, space)
			}
		}
		if meta == space || filepath.Dir(meta) != dir || filepath.Base(meta) != seg+metaSuffix {
			t.Fatalf("itemPaths(%q, %q): sidecar %q is not %q/%q", space, id, meta, dir, seg+metaSuffix)
		}
	})
}

// FuzzSidecar checks that a sidecar, however forged, is either refused
// with ErrUnsafe or names a blob that is a plain file name in the item's
// own directory, belonging to that item.
func FuzzSidecar(f *testing.F) {
	for _, s := range [][2]string{
		{"x", `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":1,"blob":"x.0123456789abcdef.b"}`},
		{"x", `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":1,"blob":"../../../etc/passwd"}`},
		{"x", `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":1,"blob":"x.0123456789abcdef.b/../../y"}`},
		{"a.b", `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":-1,"blob":"a.b.0123456789abcdef.b"}`},
		{"..", `{"blob":"...0123456789abcdef.b"}`},
		{"x", `not json`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, seg string, side []byte) {
		if _, _, s, err := itemPaths("space", seg); err != nil || s != seg {
			return // not a last segment fsstore would ever look up
		}
		m, err := parseMeta("sp/"+seg+metaSuffix, seg, side)
		if err != nil {
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("parseMeta: %v does not wrap ErrUnsafe", err)
			}
			return
		}
		dir := filepath.Join("space", "a.d")
		p := filepath.Join(dir, m.Blob)
		if filepath.Dir(p) != dir || filepath.Base(p) != m.Blob || !strings.HasPrefix(m.Blob, seg+".") || !strings.HasSuffix(m.Blob, blobSuffix) {
			t.Fatalf("sidecar of %q accepted with blob %q (path %q)", seg, m.Blob, p)
		}
		if !storage.ValidMD5(m.MD5) || m.Size < 0 {
			t.Fatalf("sidecar accepted with MD5 %q size %d", m.MD5, m.Size)
		}
	})
}
