package stores_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// An fs store's listSpillDir, as Parse checks it wherever the registry
// is read: an absolute path without "..", on an fs store only, and not a
// root of the registry's fs stores nor inside one, as written.
func TestParseListSpillDir(t *testing.T) {
	fs := func(id string, primary bool, root, spill string) string {
		if spill == "" {
			return fmt.Sprintf(`{"id": %q, "primary": %v, "kind": "fs", "root": %q}`, id, primary, root)
		}
		return fmt.Sprintf(`{"id": %q, "primary": %v, "kind": "fs", "root": %q, "listSpillDir": %q}`, id, primary, root, spill)
	}
	const inRoot = `: spills must never sit among a store's content; name a directory outside every fs store's root`
	for _, tc := range []struct {
		name string
		doc  string
		want []string // errors, without "r.json:"
	}{
		{"an absolute directory", registry([]string{fs("1", true, "/srv/m/1", "/var/tmp/mill")}), nil},
		{"a directory holding the roots, shared", registry(
			[]string{fs("1", true, "/srv/m/1", "/srv"), fs("2", false, "/srv/m/2", "/srv/")}), nil},
		{"a root's sibling with a longer name", registry([]string{fs("1", true, "/srv/m", "/srv/mill-spill")}), nil},
		{"relative", registry([]string{fs("1", true, "/srv/m/1", "tmp/spill")}),
			[]string{`3:5: account "a1" store "1": listSpillDir "tmp/spill" is not an absolute path`}},
		{"a dot-dot segment", registry([]string{fs("1", true, "/srv/m/1", "/var/tmp/../spill")}),
			[]string{`3:5: account "a1" store "1": listSpillDir "/var/tmp/../spill" has a ".." segment: write the directory itself (through a symbolic link ".." is not the parent it seems)`}},
		{"not a string", registry([]string{`{"id": "1", "primary": true, "kind": "fs", "root": "/srv/m/1", "listSpillDir": 7}`}),
			[]string{`3:84: listSpillDir must be a string, not the number 7`}},
		{"its own root", registry([]string{fs("1", true, "/srv/m/1", "/srv/m/1/")}),
			[]string{`3:5: account "a1" store "1": listSpillDir "/srv/m/1/" is the root of account "a1" store "1" (root "/srv/m/1")` + inRoot}},
		{"inside its own root", registry([]string{fs("1", true, "/srv/m/1", "/srv/m/1/.mill-tmp")}),
			[]string{`3:5: account "a1" store "1": listSpillDir "/srv/m/1/.mill-tmp" lies inside the root of account "a1" store "1" (root "/srv/m/1")` + inRoot}},
		{"inside another account's root", registry(
			[]string{fs("1", true, "/srv/m/1", "/srv/m/2/space")},
			[]string{fs("2", true, "/srv/m/2", "")}),
			[]string{`3:5: account "a1" store "1": listSpillDir "/srv/m/2/space" lies inside the root of account "a2" store "2" (root "/srv/m/2")` + inRoot}},
		{"on an s3 store", registry([]string{`{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "listSpillDir": "/var/tmp"}`}),
			[]string{`3:5: account "a1" store "1": listSpillDir is for fs stores, not s3`}},
		{"on a gcs store", registry([]string{`{"id": "1", "primary": true, "kind": "gcs", "bucket": "bkt", "anonymous": true, "endpoint": "http://127.0.0.1:4443", "listSpillDir": "/var/tmp"}`}),
			[]string{`3:5: account "a1" store "1": listSpillDir is for fs stores, not gcs`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reg := parseWant(t, tc.doc, tc.want); reg != nil {
				// The setting survives a round trip through Marshal.
				b, err := reg.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				again, err := stores.Parse("again.json", b)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := again.Accounts[0].Stores[0].ListSpillDir, reg.Accounts[0].Stores[0].ListSpillDir; got != want || want == "" {
					t.Fatalf("listSpillDir %q after a round trip, want %q", got, want)
				}
			}
		})
	}
}

// On the machine that opens an fs store, its listSpillDir must be an
// existing directory and, resolved through symbolic links, outside every
// fs store's root; the store is opened with it otherwise. Each refusal
// names the store and the key; one into a root is storage.ErrUnsafe
// (permanent).
func TestOpenerChecksListSpillDir(t *testing.T) {
	dir := t.TempDir()
	spill, file, other := filepath.Join(dir, "spill"), filepath.Join(dir, "file"), filepath.Join(dir, "other")
	for _, d := range []string{spill, filepath.Join(other, "space")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "space"), filepath.Join(dir, "to-other")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, spill string
		want        string // "" when the store opens
	}{
		{"unset", "", ""},
		{"an existing directory", spill, ""},
		{"missing", filepath.Join(dir, "nowhere"), "listSpillDir: stat " + filepath.Join(dir, "nowhere") + ": no such file or directory"},
		{"not a directory", file, fmt.Sprintf("listSpillDir: %q is not a directory", file)},
		{"a link into another store's root", filepath.Join(dir, "to-other"),
			fmt.Sprintf(`listSpillDir %q resolves to %s, which lies inside the root of account "acct" store "2" (root %q, resolving to %s) through symbolic links`,
				filepath.Join(dir, "to-other"), resolved(t, filepath.Join(other, "space")), other, resolved(t, other))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
				{ID: "1", Primary: true, Kind: storage.KindFS, Root: filepath.Join(dir, "root"), ListSpillDir: tc.spill},
				{ID: "2", Kind: storage.KindFS, Root: other},
			}}}}
			if err := reg.Validate(); err != nil {
				t.Fatalf("Validate = %v: existence and links are for the Opener to check", err)
			}
			var got string
			o := stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) {
				got = s.ListSpillDir
				return nil, nil
			}})
			_, err := o.Open(t.Context(), "acct", "1")
			if tc.want == "" {
				if err != nil || got != tc.spill {
					t.Fatalf("Open = %v, opened with listSpillDir %q; want opened with %q", err, got, tc.spill)
				}
				return
			}
			prefix := `stores: open store "1" of account "acct": `
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want %s…%s", err, prefix, tc.want)
			}
			if errors.Is(err, storage.ErrUnsafe) != strings.Contains(tc.want, "root") {
				t.Fatalf("Open = %v: errors.Is(storage.ErrUnsafe) = %v", err, !strings.Contains(tc.want, "root"))
			}
			if got != "" {
				t.Fatalf("the fs constructor was called with listSpillDir %q", got)
			}
		})
	}
}

func resolved(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
