package stores

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// An fs store sorts the listing of a directory too large for memory in
// temporary files (fsstore, Listings), in its "listSpillDir" or, when
// that is unset, os.TempDir(). The setting is hostile input like every
// other, checked in two steps as the roots are (unique.go):
//
//   - Parse, wherever the registry is read: an absolute path without a
//     ".." segment, on an fs store only, and, compared as written, not an
//     fs store's root nor inside one (its own or another's).
//   - The Opener, on the machine that opens the store: an existing
//     directory (fsstore.CheckListSpillDir), and, resolved through
//     symbolic links, not an fs store's root nor inside one
//     (storage.ErrUnsafe). fsstore.New checks its own root again.
//
// A spill directory may be shared by stores, and may contain roots: it
// is not a location (unique.go), and what is spilled there is unlinked
// at once. Inside a root, a spill that cannot be unlinked, or a crash on
// a system where unlinking waits for the close, would leave a file among
// a store's content; the rule keeps spills out of every store.

// spillDirProblem says what is wrong with an fs store's listSpillDir as
// written, or "".
func spillDirProblem(dir string) string {
	if dir == "" {
		return ""
	}
	return pathProblem("listSpillDir", dir)
}

// spillDirsInRoots reports every fs store whose listSpillDir, as written,
// is an fs store's root or lies inside one. The roots are looked up by
// each of the directory's ancestors, so n stores cost O(n × depth).
func spillDirsInRoots(w *jsonpos.Walker, all []storeAt) []error {
	roots := map[string]storeAt{}
	for _, st := range all {
		if st.s.Kind != storage.KindFS || rootProblem(st.s.Root) != "" {
			continue
		}
		if _, ok := roots[filepath.Clean(st.s.Root)]; !ok {
			roots[filepath.Clean(st.s.Root)] = st
		}
	}
	var errs []error
	for _, st := range all {
		if st.s.Kind != storage.KindFS || st.s.ListSpillDir == "" || spillDirProblem(st.s.ListSpillDir) != "" {
			continue
		}
		for p := filepath.Clean(st.s.ListSpillDir); ; p = filepath.Dir(p) {
			if o, ok := roots[p]; ok {
				errs = append(errs, w.Errorf(st.off, "%s: listSpillDir %q %s: spills must never sit among a store's content; name a directory outside every fs store's root",
					storeLabel(st), st.s.ListSpillDir, inRoot(p == filepath.Clean(st.s.ListSpillDir), fmt.Sprintf("%s (root %q)", storeLabel(o), o.s.Root))))
				break
			}
			if filepath.Dir(p) == p {
				break
			}
		}
	}
	return errs
}

// inRoot says how a spill directory relates to the root of other.
func inRoot(same bool, other string) string {
	if same {
		return "is the root of " + other
	}
	return "lies inside the root of " + other
}

// spillDirOpenProblem checks, on the machine that opens fs store s of
// account, what Parse cannot: its listSpillDir exists and is a directory,
// and resolved through symbolic links is no fs store's root nor inside
// one. nil when s has no listSpillDir.
func spillDirOpenProblem(reg *Registry, s Store) error {
	if s.ListSpillDir == "" {
		return nil
	}
	if err := fsstore.CheckListSpillDir(s.ListSpillDir); err != nil {
		return fmt.Errorf("listSpillDir: %w", err)
	}
	mine := resolvedRoot(s.ListSpillDir)
	for _, a := range reg.Accounts {
		for _, o := range a.Stores {
			if o.Kind != storage.KindFS || rootProblem(o.Root) != "" {
				continue
			}
			if theirs := resolvedRoot(o.Root); strings.HasPrefix(mine, theirs) {
				return fmt.Errorf("%w: listSpillDir %q resolves to %s, which %s through symbolic links: spills must never sit among a store's content",
					storage.ErrUnsafe, s.ListSpillDir, strings.TrimSuffix(mine, "/"),
					inRoot(mine == theirs, fmt.Sprintf("account %q store %q (root %q, resolving to %s)", a.ID, o.ID, o.Root, strings.TrimSuffix(theirs, "/"))))
			}
		}
	}
	return nil
}
