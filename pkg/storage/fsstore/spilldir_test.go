package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// New takes a spill directory only when it is an absolute path to an
// existing directory outside the store's root: a spill must never sit
// among the content, whatever path or symbolic link names it.
func TestNewChecksTheListSpillDir(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "spill")
	file := filepath.Join(base, "file")
	for _, d := range []string{root, outside, filepath.Join(root, "inner")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	linkOut, linkIn := filepath.Join(base, "to-spill"), filepath.Join(base, "to-root")
	if err := os.Symlink(outside, linkOut); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "inner"), linkIn); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		want      string // "" when the store opens
		unsafe    bool
	}{
		{"a directory outside", outside, "", false},
		{"a link to a directory outside", linkOut, "", false},
		{"the parent of the root", base, "", false},
		{"relative", "spill", "not an absolute path", false},
		{"missing", filepath.Join(base, "nowhere"), "no such file or directory", false},
		{"a file", file, "is not a directory", false},
		{"the root", root, "lies inside it", true},
		{"inside the root", filepath.Join(root, ".mill-tmp"), "lies inside it", true},
		{"a link into the root", linkIn, "lies inside it", true},
		{"the root through dot-dot", filepath.Join(outside, "..", "root", "inner"), "lies inside it", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := fsstore.New(root, fsstore.WithListSpillDir(c.dir))
			if c.want == "" {
				if err != nil {
					t.Fatalf("New with spill directory %q: %v", c.dir, err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("New with spill directory %q opened the store", c.dir)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "list spill directory") {
				t.Fatalf("New with spill directory %q: %v, want an error saying %q", c.dir, err, c.want)
			}
			if errors.Is(err, fsstore.ErrUnsafe) != c.unsafe {
				t.Fatalf("New with spill directory %q: %v: errors.Is(ErrUnsafe) is %v", c.dir, err, !c.unsafe)
			}
		})
	}
}
