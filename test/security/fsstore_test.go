package security

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// hostileIDs are content IDs an attacker (or a corrupt message) might send
// to escape a filesystem store or confuse its layout.
var hostileIDs = []string{
	"../escape", "../../escape", "../../../../../../../../tmp/escape", "a/../../escape", "a/b/../../../escape",
	"..", ".", "./escape", "a/./b", "a/..", "a/../b", ".mill-tmp/../escape", "x.d/../../escape",
	"/abs/escape", "//escape", "a//b", "escape/", "/", "\\..\\..\\escape", `..\escape`,
	"a\x00b", "\x00", "../\x00escape", "x\nescape", "x\rescape", "x\x7f",
	"%2e%2e/escape", "..%2fescape", "%2e%2e%2fescape", "\u2024\u2024/escape", "..\u2215escape",
	"~/escape", "$HOME/escape", "...", ".../escape", "a/.../b", "\xff\xfe", "\xc0\xae\xc0\xae/escape",
	strings.Repeat("a", 10<<10), "a/" + strings.Repeat("b", 300), strings.Repeat("x/", 511) + "y",
	strings.Repeat("../", 341), ".mill-space.json", "escape.m", "escape.0123456789abcdef.b",
}

// hostileSpaces are space IDs that must never name a directory outside the
// root (or the root's own bookkeeping).
var hostileSpaces = []string{"..", ".", "../escape", "/abs", "a/b", `..\x`, ".mill-tmp", "", "\x00", strings.Repeat("s", 64)}

// snapshot lists every path under dir (relative, sorted by WalkDir).
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFSStoreHostileIDsStayInsideTheRoot(t *testing.T) {
	ctx := context.Background()
	outer := t.TempDir()
	root := filepath.Join(outer, "store", "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Decoys an escape would overwrite, delete or create next to.
	sentinel := []byte("do not touch")
	for _, p := range []string{"escape", "store/escape", "sentinel"} {
		if err := os.WriteFile(filepath.Join(outer, p), sentinel, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, outer)

	s, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSpace(ctx, "space"); err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, id := range hostileIDs {
		body := []byte("payload of " + id)
		info, err := s.Put(ctx, "space", id, bytes.NewReader(body), storage.PutOptions{Size: int64(len(body)), Properties: map[string]string{"k": id}})
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Errorf("Put(%.60q): %v, want an error wrapping storage.ErrInvalidID", id, err)
			}
			for _, op := range []func() error{
				func() error { _, err := s.Head(ctx, "space", id); return err },
				func() error { _, _, err := s.Get(ctx, "space", id); return err },
				func() error { return s.SetProperties(ctx, "space", id, map[string]string{"a": "b"}) },
				func() error { return s.Delete(ctx, "space", id) },
			} {
				if err := op(); err == nil {
					t.Errorf("an operation on refused ID %.60q succeeded", id)
				}
			}
			continue
		}
		stored++
		// Accepted: it must read back as itself and be deletable.
		rc, _, err := s.Get(ctx, "space", id)
		if err != nil {
			t.Errorf("Get(%.60q) after Put: %v", id, err)
			continue
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, body) || info.Size != int64(len(body)) {
			t.Errorf("Get(%.60q) = %q", id, got)
		}
	}
	for _, sp := range hostileSpaces {
		if err := s.CreateSpace(ctx, sp); err == nil {
			t.Errorf("CreateSpace(%q) succeeded", sp)
		}
		if _, err := s.Put(ctx, sp, "x", strings.NewReader("x"), storage.PutOptions{Size: 1}); err == nil {
			t.Errorf("Put in space %q succeeded", sp)
		}
		if err := s.DeleteSpace(ctx, sp); !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("DeleteSpace(%q): %v, want an error wrapping storage.ErrInvalidID", sp, err)
		}
	}

	// The filesystem outside root/ is exactly as before, decoys intact,
	// and everything inside root/ is the space, the temporary directory or
	// the space's trash.
	var outside []string
	for _, p := range snapshot(t, outer) {
		if p == "store/root" || strings.HasPrefix(p, "store/root/") {
			continue
		}
		outside = append(outside, p)
	}
	if !equalWithout(before, outside, "store/root") {
		t.Errorf("paths outside the root changed:\nbefore %q\nafter  %q", before, outside)
	}
	for _, p := range []string{"escape", "store/escape", "sentinel"} {
		b, err := os.ReadFile(filepath.Join(outer, p))
		if err != nil || !bytes.Equal(b, sentinel) {
			t.Errorf("decoy %s: %q, %v", p, b, err)
		}
	}
	for _, p := range snapshot(t, root) {
		if p != "." && p != "space" && p != ".mill-tmp" && p != ".mill-trash" && !strings.HasPrefix(p, "space/") && !strings.HasPrefix(p, ".mill-tmp/") && !strings.HasPrefix(p, ".mill-trash/space/") {
			t.Errorf("unexpected path in the root: %q", p)
		}
	}
	if stored == 0 {
		t.Fatal("no hostile-looking ID was stored; the inside-the-root check saw nothing")
	}
	t.Logf("%d hostile IDs: %d stored inside the space, %d refused", len(hostileIDs), stored, len(hostileIDs)-stored)
}

// equalWithout compares the paths of before, minus the root itself and
// everything under it, with after.
func equalWithout(before, after []string, rootRel string) bool {
	var b []string
	for _, p := range before {
		if p == rootRel || strings.HasPrefix(p, rootRel+"/") {
			continue
		}
		b = append(b, p)
	}
	return strings.Join(b, "\n") == strings.Join(after, "\n")
}
