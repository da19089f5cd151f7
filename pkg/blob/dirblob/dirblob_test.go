package dirblob_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/dirblob"
)

// TestConformance runs the suite on a directory inside a parent that the
// test then checks: nothing was written beside the root, and no temporary
// file is left.
func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{New: func(t *testing.T, o *blob.Options) blobtest.Fixture {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		t.Cleanup(func() { checkLeftovers(t, parent) })
		return blobtest.Fixture{Store: dirblob.New(root, o), Plant: func(t *testing.T, name string, data []byte) {
			p := filepath.Join(root, filepath.FromSlash(name))
			if name == "" {
				p = filepath.Join(parent, "outside")
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}}
	}})
}

func checkLeftovers(t *testing.T, parent string) {
	filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(parent, p)
		switch {
		case strings.HasPrefix(d.Name(), ".put-"):
			t.Errorf("temporary file %s left", rel)
		case rel != "." && rel != "outside" && rel != "root" && !strings.HasPrefix(rel, "root"+string(filepath.Separator)):
			t.Errorf("%s written outside the root", rel)
		}
		return nil
	})
}

// A temporary file a crash left is not a blob.
func TestCrashLeftovers(t *testing.T) {
	root := t.TempDir()
	s := dirblob.New(root, nil)
	if err := s.Put(t.Context(), "a/b", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", ".put-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.List(t.Context(), ""); err != nil || len(keys) != 1 || keys[0] != "a/b" {
		t.Fatalf("list: %q, %v", keys, err)
	}
}
