package stores

import (
	"cmp"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/endpoint"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// Stores are unique: no two stores of the registry, of one account or of
// two, may share or nest a location, or a policy of one could delete what
// the other holds (docs/ARCHITECTURE.md, Stores and storage providers).
//
// A location is a namespace and a path in it; two stores collide when
// their namespaces are equal and one path is a prefix of the other.
//
//   - s3: the namespace is the service and the bucket. The service is AWS
//     for a store without an endpoint or with an AWS endpoint (bucket names
//     are global across AWS regions, so the region does not tell two
//     buckets apart), else the endpoint's host and port, case-folded, with
//     every loopback name one host ("localhost" and 127.0.0.1 are one
//     emulator); the endpoint's scheme and path are ignored. Bucket names
//     compare case-insensitively: S3's names are lower case, a legacy
//     name with capitals is reached through case-blind DNS in
//     virtual-hosted style, and refusing two names that differ only in
//     case costs nothing real. The path is the key prefix exactly as
//     s3store uses it:
//     keys are prefix + space + "/" + ID with nothing in between, so
//     "a/" and "ab/" are apart, while "a" and "ab" collide ("a" + space
//     "bx" is "ab" + space "x") — write prefixes ending in '/'.
//   - fs: the namespace is the local filesystem, the path the cleaned root
//     plus '/', so roots compare on whole path segments ("/srv/a" and
//     "/srv/ab" are apart). Parse compares roots as written: resolving
//     symbolic links needs the machine the stores are on, and a registry
//     is often validated elsewhere; a root with a ".." segment is refused
//     instead of cleaned, since through a link ".." is not the parent it
//     seems. The Opener, on the machine that uses the stores, resolves
//     the links and refuses to open an fs store whose resolved root
//     aliases another's (fsAliasProblem).
//
// Host names are not resolved either: two names of one S3 service are two
// services to this check.

// storeAt is a store of the registry with its account and the offset of
// its object in the file.
type storeAt struct {
	account string
	s       Store
	off     int64
	fixity  fixityAt // its "fixity" object as parsed (parse.go)
}

// location is where a store keeps its content, as compared for aliasing.
type location struct {
	ns, path string
}

// storeLocations returns a store's locations; none when the store's
// fields are already refused (no location to compare). An s3 store's
// bucket and prefix are one. A DuraCloud-layout store's space buckets are
// another: the namespace of its account prefix on its service, the whole
// of it; and a store whose bucket is named like a space bucket of some
// account prefix (<20 letters and digits>.<rest>) lies at <rest>/<prefix>
// in that namespace, so it collides with the DuraCloud store it is a
// space of.
func storeLocations(s Store) []location {
	switch s.Kind {
	case storage.KindS3:
		if s.Bucket == "" || !validBucket(s.Bucket) {
			return nil
		}
		bucket := strings.ToLower(s.Bucket)
		locs := []location{{ns: "s3 " + serviceOf(s) + " " + bucket, path: s.Prefix}}
		if s.Layout == s3store.LayoutDuraCloud && s3store.ValidAccountPrefix(s.AccountPrefix) {
			locs = append(locs, location{ns: duraNS(s, strings.ToLower(s.AccountPrefix))})
		}
		if acct, rest, ok := strings.Cut(bucket, "."); ok && s3store.ValidAccountPrefix(acct) {
			locs = append(locs, location{ns: duraNS(s, acct), path: rest + "/" + s.Prefix})
		}
		return locs
	case storage.KindFS:
		if rootProblem(s.Root) != "" {
			return nil
		}
		return []location{{ns: "fs", path: strings.TrimSuffix(filepath.Clean(s.Root), "/") + "/"}}
	case storage.KindGCS, storage.KindAzure:
		if l, ok := cloudLocation(s); ok {
			return []location{l}
		}
		return nil
	}
	return nil
}

// duraNS is the namespace of the space buckets of an account prefix.
func duraNS(s Store, accountPrefix string) string {
	return "s3 " + serviceOf(s) + " duracloud spaces " + accountPrefix + ".*"
}

// serviceOf names the S3 service a store is on.
func serviceOf(s Store) string {
	if s.Endpoint == "" || endpoint.AWS(s.Endpoint) {
		return "aws"
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return s.Endpoint
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if endpoint.Loopback(host) {
		host = "loopback"
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return host + ":" + port
}

// describe shows a store's location as the registry writes it.
func describe(s Store) string {
	if s.Kind == storage.KindFS {
		return fmt.Sprintf("root %q", s.Root)
	}
	if s.Kind == storage.KindGCS || s.Kind == storage.KindAzure {
		return describeCloud(s)
	}
	d := fmt.Sprintf("s3://%s/%s", s.Bucket, s.Prefix)
	if s.Layout == s3store.LayoutDuraCloud {
		d += fmt.Sprintf(" and space buckets %s.*", strings.ToLower(s.AccountPrefix))
	}
	if s.Endpoint != "" {
		d += " at " + s.Endpoint
	}
	return d
}

// validBucket reports whether b is made of the characters of S3 bucket
// names (legacy names included: capitals and '_'), so that nothing in it
// can change the request's path or host.
func validBucket(b string) bool {
	return len(b) <= 255 && !strings.ContainsFunc(b, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	})
}

// rootProblem says what is wrong with an fs store's root, or "".
func rootProblem(root string) string {
	switch {
	case root == "":
		return "an fs store needs a root directory"
	case pathProblem("root", root) != "":
		return pathProblem("root", root)
	case filepath.Clean(root) == "/":
		return fmt.Sprintf("root %q is the whole filesystem: give a store a directory of its own", root)
	}
	return ""
}

// pathProblem says what is wrong with the directory p that key names,
// or "": it must be absolute and without a ".." segment, which is not
// cleaned away since through a symbolic link ".." is not the parent it
// seems.
func pathProblem(key, p string) string {
	switch {
	case !filepath.IsAbs(p):
		return fmt.Sprintf("%s %q is not an absolute path", key, p)
	case slices.Contains(strings.Split(filepath.ToSlash(p), "/"), ".."):
		return fmt.Sprintf("%s %q has a \"..\" segment: write the directory itself (through a symbolic link \"..\" is not the parent it seems)", key, p)
	}
	return ""
}

// collisions reports every store whose location equals, lies inside or
// contains another's: one error per colliding pair found, at the store
// that comes later in the file, naming both. Each store is compared with
// its nearest enclosing location (the first in the file of equal ones;
// sorted, with a stack), so n stores cost O(n log n), not n².
func collisions(w *jsonpos.Walker, all []storeAt) []error {
	type entry struct {
		loc location
		st  storeAt
	}
	var es []entry
	for _, st := range all {
		for _, loc := range storeLocations(st.s) {
			es = append(es, entry{loc, st})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.loc.ns, b.loc.ns), strings.Compare(a.loc.path, b.loc.path), cmp.Compare(a.st.off, b.st.off))
	})
	var errs []error
	var stack []entry
	for _, e := range es {
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.loc.ns == e.loc.ns && strings.HasPrefix(e.loc.path, top.loc.path) {
				break
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].st.off == e.st.off {
			continue // one store's own locations (its problems are reported apart)
		}
		if len(stack) > 0 {
			outer := stack[len(stack)-1]
			later, earlier, rel := e, outer, "lies inside"
			switch {
			case outer.loc.path == e.loc.path:
				rel = "is the same location as"
			case outer.st.off > e.st.off:
				later, earlier, rel = outer, e, "contains"
			}
			errs = append(errs, w.Errorf(later.st.off, "%s (%s) %s %s (%s): no two stores may share or nest a location (a policy of one would delete what the other holds); give each its own bucket, prefix or root",
				storeLabel(later.st), describe(later.st.s), rel, storeLabel(earlier.st), describe(earlier.st.s)))
			if outer.loc.path == e.loc.path {
				continue // the first of equal locations stands for them all
			}
		}
		stack = append(stack, e)
	}
	return errs
}

func storeLabel(st storeAt) string {
	return fmt.Sprintf("account %q store %q", st.account, st.s.ID)
}

// fsAliasProblem checks, on the machine that opens an fs store, what Parse
// cannot: the store's root resolved through symbolic links must not be,
// lie inside or contain another fs store's resolved root. A root that does
// not exist yet is resolved as far as it exists. It returns nil when the
// store is alone, else an error wrapping storage.ErrUnsafe (retrying
// cannot help: processors dead-letter it at once as permanent).
func fsAliasProblem(reg *Registry, account string, s Store) error {
	mine := resolvedRoot(s.Root)
	for _, a := range reg.Accounts {
		for _, o := range a.Stores {
			if o.Kind != storage.KindFS || (a.ID == account && o.ID == s.ID) || rootProblem(o.Root) != "" {
				continue
			}
			theirs := resolvedRoot(o.Root)
			rel := ""
			switch {
			case mine == theirs:
				rel = "is"
			case strings.HasPrefix(mine, theirs):
				rel = "lies inside"
			case strings.HasPrefix(theirs, mine):
				rel = "contains"
			default:
				continue
			}
			return fmt.Errorf("%w: root %q resolves to %s, which %s the root of account %q store %q (%q, resolving to %s) through symbolic links: no two stores may share or nest a location",
				storage.ErrUnsafe, s.Root, strings.TrimSuffix(mine, "/"), rel, a.ID, o.ID, o.Root, strings.TrimSuffix(theirs, "/"))
		}
	}
	return nil
}

// resolvedRoot is root with its symbolic links resolved, as far as it
// exists, cleaned and ending in '/'.
func resolvedRoot(root string) string {
	p, rest := filepath.Clean(root), ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = filepath.Join(r, rest)
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			p = filepath.Join(p, rest)
			break
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
	return strings.TrimSuffix(p, "/") + "/"
}
