package fsstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// tree records every path under dir with its contents (files) or link
// target (symlinks), so a test can prove the directory is byte-identical
// afterwards.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file:" + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// outsideDir is a directory next to the store root holding what an escape
// would read, overwrite or delete: a space record, a sidecar and a blob that
// look like fsstore's own, and a secret.
func outsideDir(t *testing.T, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "outside")
	files := map[string]string{
		".mill-space.json":          `{"acls":{}}`,
		"secret":                    "the secret bytes",
		"x.m":                       `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":16,"mimetype":"text/plain","blob":"x.0123456789abcdef.b"}`,
		"x.0123456789abcdef.b":      "outside blob....",
		"a.d/x.m":                   `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":16,"mimetype":"text/plain","blob":"x.0123456789abcdef.b"}`,
		"a.d/x.0123456789abcdef.b":  "outside blob....",
		"deep/er/secret-of-another": "another secret",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// everyOp runs each provider operation on space/id and returns the names
// of those that succeeded.
func everyOp(ctx context.Context, s *fsstore.Store, space, id string) []string {
	var ok []string
	try := func(name string, err error) {
		if err == nil {
			ok = append(ok, name)
		}
	}
	_, err := s.Head(ctx, space, id)
	try("Head", err)
	rc, _, err := s.Get(ctx, space, id)
	if err == nil {
		io.Copy(io.Discard, rc)
		rc.Close()
	}
	try("Get", err)
	_, _, err = s.ListContent(ctx, space, "", 100)
	if err == nil {
		// Listing may succeed (showing nothing it cannot vouch for) only
		// when it lists none of the planted items.
		ids, _, _ := s.ListContent(ctx, space, "", 100)
		if len(ids) > 0 {
			try("ListContent", nil)
		}
	}
	try("SetProperties", s.SetProperties(ctx, space, id, map[string]string{"k": "v"}))
	body := []byte("overwrite attempt")
	_, err = s.Put(ctx, space, id, bytes.NewReader(body), storage.PutOptions{Size: int64(len(body))})
	try("Put", err)
	_, err = s.Put(ctx, space, "a/new-item", bytes.NewReader(body), storage.PutOptions{Size: int64(len(body))})
	try("Put(a/new-item)", err)
	try("SetSpaceACLs", s.SetSpaceACLs(ctx, space, map[string]string{"u": "WRITE"}))
	// Delete of a planted item "succeeds" as already gone only when the
	// store does not see it; what matters is that nothing outside changed,
	// which the caller checks.
	_ = s.Delete(ctx, space, id)
	_ = s.DeleteSpace(ctx, space)
	return ok
}

// storeBesideOutside opens a store in parent/root, next to parent/outside
// (outsideDir), with one space.
func storeBesideOutside(t *testing.T, space string) (s *fsstore.Store, root, outside string) {
	t.Helper()
	parent := t.TempDir()
	outside = outsideDir(t, parent)
	root = filepath.Join(parent, "root")
	s, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSpace(context.Background(), space); err != nil {
		t.Fatal(err)
	}
	return s, root, outside
}

// confined opens a store in parent/root after plant has arranged the root,
// runs every operation on space/id, and checks that those listed in allowed
// are the only ones that succeeded and that parent/outside is unchanged.
func confined(t *testing.T, plant func(t *testing.T, root, outside string), space, id string, allowed ...string) {
	t.Helper()
	s, root, outside := storeBesideOutside(t, "real")
	ctx := context.Background()
	plant(t, root, outside)
	before := tree(t, outside)
	ok := everyOp(ctx, s, space, id)
	if spaces, err := s.ListSpaces(ctx); err != nil || len(spaces) != 1 || spaces[0] != "real" {
		t.Errorf("ListSpaces = %q, %v; want only the real space", spaces, err)
	}
	for _, name := range ok {
		found := false
		for _, a := range allowed {
			found = found || a == name
		}
		if !found {
			t.Errorf("%s on %s/%s succeeded; want it refused", name, space, id)
		}
	}
	if after := tree(t, outside); !maps.Equal(before, after) {
		t.Errorf("the directory outside the root changed:\nbefore %q\nafter  %q", before, after)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestSymlinkedSpaceDirIsRefused(t *testing.T) {
	confined(t, func(t *testing.T, root, outside string) {
		symlink(t, outside, filepath.Join(root, "evil"))
	}, "evil", "x")
	// A relative link that stays inside the root but aliases another space.
	confined(t, func(t *testing.T, root, _ string) {
		symlink(t, "real", filepath.Join(root, "alias"))
	}, "alias", "x")
}

func TestSymlinkedContentDirIsRefused(t *testing.T) {
	confined(t, func(t *testing.T, root, outside string) {
		symlink(t, filepath.Join(outside, "a.d"), filepath.Join(root, "real", "a.d"))
	}, "real", "a/x", "SetSpaceACLs")
	confined(t, func(t *testing.T, root, outside string) {
		symlink(t, "../../outside/a.d", filepath.Join(root, "real", "a.d"))
	}, "real", "a/x", "SetSpaceACLs")
}

func TestSymlinkedBlobIsRefused(t *testing.T) {
	confined(t, func(t *testing.T, root, outside string) {
		b, err := os.ReadFile(filepath.Join(outside, "x.m"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "real", "x.m"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "real", "x.0123456789abcdef.b"))
	}, "real", "x", "Put(a/new-item)", "SetSpaceACLs", "ListContent")
	confined(t, func(t *testing.T, root, outside string) {
		symlink(t, filepath.Join(outside, "x.m"), filepath.Join(root, "real", "x.m"))
	}, "real", "x", "Put(a/new-item)", "SetSpaceACLs")
}

func TestForgedSidecarIsRefused(t *testing.T) {
	for _, blob := range []string{
		"../../outside/secret", "../../../outside/secret", "../real.d/../../outside/secret",
		"/etc/passwd", "", ".", "..", "x.m", "y.0123456789abcdef.b", "x.0123456789abcdef.b/../../../outside/secret",
		"x.0123456789ABCDEF.b", "x.012345.b",
	} {
		t.Run(strings.ReplaceAll(blob, "/", "_"), func(t *testing.T) {
			confined(t, func(t *testing.T, root, outside string) {
				side, _ := json.Marshal(map[string]any{"md5": "0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2", "size": 16, "mimetype": "text/plain", "blob": blob})
				if err := os.WriteFile(filepath.Join(root, "real", "x.m"), side, 0o644); err != nil {
					t.Fatal(err)
				}
			}, "real", "x", "Put(a/new-item)", "SetSpaceACLs", "ListContent")
		})
	}
}

// TestForgedSidecarError checks the refusal names the rule broken.
func TestForgedSidecarError(t *testing.T) {
	root := t.TempDir()
	s, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateSpace(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	side := `{"md5":"0b6d2f9ea1a3c8e2ed0ec1b5c4f3b1b2","size":1,"blob":"../../../etc/passwd"}`
	if err := os.WriteFile(filepath.Join(root, "sp", "x.m"), []byte(side), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "sp", "x")
	if !errors.Is(err, fsstore.ErrUnsafe) || !strings.Contains(err.Error(), "blob") {
		t.Fatalf("Get with a forged sidecar: %v, want fsstore.ErrUnsafe naming the blob", err)
	}
}
