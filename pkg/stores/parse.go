package stores

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// credentialWords are fragments of field names that hold secrets.
var credentialWords = []string{"secret", "password", "passwd", "accesskey", "sessiontoken", "token", "credential", "privatekey"}

func looksLikeCredential(key string) bool {
	k := strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(key))
	for _, w := range credentialWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Parse reads accounts.json; name is used in errors. Every problem is
// reported at once (errors.Join of *jsonpos.Error, "file:line:col: …"),
// naming the account and store: invalid JSON, unknown keys, credential-like
// fields, empty or repeated account and store ids, an unknown status or
// kind, missing bucket (s3) or root (fs), fields that do not belong to the
// store's kind, a region, provider or threatZone that is not a short
// label (place.go), a malformed endpoint or role ARN, an fs root that is not
// absolute, is "/" or has a ".." segment, an fs store's listSpillDir that
// is not absolute, has a ".." segment or is (or lies inside) an fs store's
// root as written (spilldir.go), two stores (of any accounts)
// sharing or nesting a location (unique.go), and an active account without
// exactly one primary store (an inactive one may have none, never
// several). A store's "fixity" object is checked value by value
// (fixityparse.go): durations positive, a known archivedMethod, a
// sampleRate in (0, 1], no unknown key, no archival setting on an fs
// store; each problem at the value's own line and column.
func Parse(name string, data []byte) (*Registry, error) {
	if err := jsonpos.Check(name, data); err != nil {
		return nil, err
	}
	w := jsonpos.NewWalker(name, data)
	r := &Registry{Accounts: []Account{}}
	var errs []error
	if _, err := w.Delim('{', "the registry"); err != nil {
		return nil, err
	}
	sawAccounts := false
	for w.More() {
		key, off, err := w.String("key")
		if err != nil {
			return nil, err
		}
		switch {
		case key == "accounts" && !sawAccounts:
			sawAccounts = true
			if _, err := w.Delim('[', "accounts"); err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			var all []storeAt
			for w.More() {
				a, aerrs, err := parseAccount(w)
				if err != nil {
					return nil, err
				}
				errs = append(errs, aerrs...)
				if a.ID != "" && seen[a.ID] {
					errs = append(errs, w.Errorf(a.off, "account %q appears twice", a.ID))
				}
				seen[a.ID] = true
				r.Accounts = append(r.Accounts, a.Account)
				all = append(all, a.stores...)
			}
			errs = append(errs, collisions(w, all)...)
			errs = append(errs, spillDirsInRoots(w, all)...)
			if err := w.End(); err != nil {
				return nil, err
			}
		case key == "accounts":
			errs = append(errs, w.Errorf(off, "key %q appears twice", key))
			if err := w.Skip(); err != nil {
				return nil, err
			}
		case looksLikeCredential(key):
			errs = append(errs, w.Errorf(off, "%q looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or a store's roleArn)", key))
			if err := w.Skip(); err != nil {
				return nil, err
			}
		default:
			errs = append(errs, w.Errorf(off, "unknown key %q (want accounts)", key))
			if err := w.Skip(); err != nil {
				return nil, err
			}
		}
	}
	if err := w.EndDocument(); err != nil {
		return nil, err
	}
	if !sawAccounts {
		errs = append(errs, w.Errorf(0, "missing key \"accounts\""))
	}
	if len(errs) > 0 {
		jsonpos.Sort(errs)
		return nil, errors.Join(errs...)
	}
	return r, nil
}

type posAccount struct {
	Account
	off    int64
	stores []storeAt
}

func parseAccount(w *jsonpos.Walker) (posAccount, []error, error) {
	var a posAccount
	off, err := w.Delim('{', "an account")
	if err != nil {
		return a, nil, err
	}
	a.off = off
	a.Stores = []Store{}
	var errs []error
	have := map[string]bool{}
	statusOff := off
	var stores []storeAt
	for w.More() {
		key, koff, err := w.String("key")
		if err != nil {
			return a, nil, err
		}
		if have[key] {
			errs = append(errs, w.Errorf(koff, "key %q appears twice", key))
		}
		have[key] = true
		switch key {
		case "id":
			v, _, err := w.String("account id")
			if err != nil {
				errs = append(errs, err)
			}
			a.ID = v
		case "status":
			v, voff, err := w.String("status")
			if err != nil {
				errs = append(errs, err)
			}
			a.Status, statusOff = Status(v), voff
		case "stores":
			if _, err := w.Delim('[', "stores"); err != nil {
				return a, nil, err
			}
			for w.More() {
				s, soff, serrs, fa, err := parseStore(w)
				if err != nil {
					return a, nil, err
				}
				errs = append(errs, serrs...)
				stores = append(stores, storeAt{s: s, off: soff, fixity: fa})
			}
			if err := w.End(); err != nil {
				return a, nil, err
			}
		default:
			if looksLikeCredential(key) {
				errs = append(errs, w.Errorf(koff, "account: %q looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or a store's roleArn)", key))
			} else {
				errs = append(errs, w.Errorf(koff, "account: unknown key %q (want id, status, stores)", key))
			}
			if err := w.Skip(); err != nil {
				return a, nil, err
			}
		}
	}
	if err := w.End(); err != nil {
		return a, nil, err
	}
	label := fmt.Sprintf("account %q", a.ID)
	if a.ID == "" {
		errs = append(errs, w.Errorf(off, "account without an id"))
		label = "account"
	}
	switch a.Status {
	case "":
		a.Status = StatusActive
	case StatusActive, StatusInactive:
	default:
		errs = append(errs, w.Errorf(statusOff, "%s: unknown status %q (want active or inactive)", label, a.Status))
	}
	seen := map[string]bool{}
	var primaries []int64
	for _, st := range stores {
		s := st.s
		slabel := fmt.Sprintf("%s store %q", label, s.ID)
		if s.ID == "" {
			errs = append(errs, w.Errorf(st.off, "%s: store without an id", label))
		} else if seen[s.ID] {
			errs = append(errs, w.Errorf(st.off, "%s: store id %q appears twice", label, s.ID))
		}
		seen[s.ID] = true
		for _, msg := range storeProblems(s) {
			errs = append(errs, w.Errorf(st.off, "%s: %s", slabel, msg))
		}
		for _, p := range append(st.fixity.problems, st.fixity.kindProblems(s.Kind)...) {
			errs = append(errs, w.Errorf(p.off, "%s: %s", slabel, p.msg))
		}
		if s.Primary {
			primaries = append(primaries, st.off)
		}
		a.Stores = append(a.Stores, s)
		a.stores = append(a.stores, storeAt{account: a.ID, s: s, off: st.off})
	}
	switch {
	case len(primaries) > 1:
		errs = append(errs, w.Errorf(primaries[1], "%s: more than one primary store", label))
	case len(primaries) == 0 && a.Status == StatusActive:
		errs = append(errs, w.Errorf(off, "%s: an active account needs exactly one primary store (none is marked \"primary\": true)", label))
	}
	return a, errs, nil
}

func parseStore(w *jsonpos.Walker) (Store, int64, []error, fixityAt, error) {
	var s Store
	var fa fixityAt
	off, err := w.Delim('{', "a store")
	if err != nil {
		return s, off, nil, fa, err
	}
	var errs []error
	var place []problemAt
	have := map[string]bool{}
	str := map[string]*string{
		"id": &s.ID, "bucket": &s.Bucket, "prefix": &s.Prefix, "layout": &s.Layout, "accountPrefix": &s.AccountPrefix,
		"endpoint": &s.Endpoint, "roleArn": &s.RoleARN, "profile": &s.Profile, "root": &s.Root, "listSpillDir": &s.ListSpillDir,
		"serviceAccountFile": &s.ServiceAccountFile, "storageAccount": &s.StorageAccount, "container": &s.Container,
		"connectionStringEnv": &s.ConnectionStringEnv, "managedIdentityClientId": &s.ManagedIdentityClientID,
	}
	flags := map[string]*bool{
		"primary": &s.Primary, "allowInsecureEndpoint": &s.AllowInsecureEndpoint, "ambientCredentials": &s.AmbientCredentials,
		"anonymous": &s.Anonymous, "managedIdentity": &s.ManagedIdentity,
	}
	for w.More() {
		key, koff, err := w.String("key")
		if err != nil {
			return s, off, nil, fa, err
		}
		if have[key] {
			errs = append(errs, w.Errorf(koff, "store: key %q appears twice", key))
		}
		have[key] = true
		if placeKeys[key] {
			dst := map[string]*string{"region": &s.Region, "provider": &s.Provider, "threatZone": &s.ThreatZone}[key]
			ps, err := parsePlace(w, key, dst)
			if err != nil {
				return s, off, nil, fa, err
			}
			place = append(place, ps...)
			continue
		}
		if p, ok := str[key]; ok {
			v, _, err := w.String(key)
			if err != nil {
				errs = append(errs, err)
			}
			*p = v
			continue
		}
		if p, ok := flags[key]; ok {
			v, _, err := w.Bool(key)
			if err != nil {
				errs = append(errs, err)
			}
			*p = v
			continue
		}
		switch key {
		case "fixity":
			if fa, err = parseFixity(w); err != nil {
				return s, off, nil, fa, err
			}
			s.Fixity = fa.f
		case "kind":
			v, _, err := w.String(key)
			if err != nil {
				errs = append(errs, err)
			}
			s.Kind = storage.Kind(v)
		default:
			if looksLikeCredential(key) {
				errs = append(errs, w.Errorf(koff, "store: %q looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or roleArn)", key))
			} else {
				errs = append(errs, w.Errorf(koff, "store: unknown key %q (want id, primary, kind, bucket, prefix, region, layout, accountPrefix, endpoint, allowInsecureEndpoint, roleArn, profile, ambientCredentials, root, listSpillDir, serviceAccountFile, anonymous, storageAccount, container, connectionStringEnv, managedIdentity, managedIdentityClientId, fixity, provider, threatZone)", key))
			}
			if err := w.Skip(); err != nil {
				return s, off, nil, fa, err
			}
		}
	}
	if err := w.End(); err != nil {
		return s, off, nil, fa, err
	}
	// The place fields' problems are reported, labelled with the store,
	// with the fixity object's (parseAccount).
	fa.problems = append(fa.problems, place...)
	return s, off, errs, fa, nil
}

// storeProblems lists what is wrong with one store's fields.
func storeProblems(s Store) []string {
	var out []string
	switch s.Kind {
	case storage.KindS3:
		if s.Bucket == "" {
			out = append(out, "an s3 store needs a bucket")
		} else if !validBucket(s.Bucket) {
			out = append(out, fmt.Sprintf("bucket %q is not an S3 bucket name (letters, digits, '.', '-' and '_')", s.Bucket))
		}
		if s.Root != "" {
			out = append(out, "root is for fs stores, not s3")
		}
		if s.ListSpillDir != "" {
			out = append(out, "listSpillDir is for fs stores, not s3")
		}
		if strings.HasPrefix(s.Prefix, "/") {
			out = append(out, fmt.Sprintf("prefix %q must not start with /", s.Prefix))
		}
		if s.RoleARN != "" && (!strings.HasPrefix(s.RoleARN, "arn:") || !strings.Contains(s.RoleARN, ":role/")) {
			out = append(out, fmt.Sprintf("roleArn %q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", s.RoleARN))
		}
		out = append(out, s.accessProblems()...)
		out = append(out, layoutProblems(s)...)
	case storage.KindFS:
		if p := rootProblem(s.Root); p != "" {
			out = append(out, p)
		}
		if p := spillDirProblem(s.ListSpillDir); p != "" {
			out = append(out, p)
		}
		for k, v := range map[string]string{"bucket": s.Bucket, "prefix": s.Prefix, "endpoint": s.Endpoint, "roleArn": s.RoleARN, "profile": s.Profile, "layout": s.Layout, "accountPrefix": s.AccountPrefix} {
			if v != "" {
				out = append(out, k+" is for s3 stores, not fs")
			}
		}
		for k, v := range map[string]bool{"allowInsecureEndpoint": s.AllowInsecureEndpoint, "ambientCredentials": s.AmbientCredentials} {
			if v {
				out = append(out, k+" is for s3 stores, not fs")
			}
		}
		slices.Sort(out)
	case storage.KindGCS:
		out = append(out, gcsProblems(s)...)
	case storage.KindAzure:
		out = append(out, azureProblems(s)...)
	case "":
		out = append(out, `missing kind (want "s3", "fs", "gcs" or "azure")`)
	default:
		out = append(out, fmt.Sprintf(`unknown kind %q (want "s3", "fs", "gcs" or "azure")`, s.Kind))
	}
	if s.Kind == storage.KindS3 || s.Kind == storage.KindFS {
		out = append(out, cloudFieldProblems(s)...)
	}
	return out
}

// layoutProblems lists what is wrong with an s3 store's layout fields.
func layoutProblems(s Store) []string {
	switch s.Layout {
	case s3store.LayoutMill:
		if s.AccountPrefix != "" {
			return []string{fmt.Sprintf("accountPrefix is for stores with \"layout\": %q", s3store.LayoutDuraCloud)}
		}
	case s3store.LayoutDuraCloud:
		if !s3store.ValidAccountPrefix(s.AccountPrefix) {
			return []string{fmt.Sprintf("accountPrefix %q is not %d ASCII letters and digits (the access key ID DuraCloud names its space buckets with)", s.AccountPrefix, s3store.AccountPrefixLen)}
		}
		if strings.HasPrefix(strings.ToLower(s.Bucket), strings.ToLower(s.AccountPrefix)+".") {
			return []string{fmt.Sprintf("bucket %q is named like one of the store's space buckets (%s.<space>): give Mill's bookkeeping a bucket of its own", s.Bucket, strings.ToLower(s.AccountPrefix))}
		}
	default:
		return []string{fmt.Sprintf("unknown layout %q (want %q, the default, or %q)", s.Layout, s3store.LayoutMill, s3store.LayoutDuraCloud)}
	}
	return nil
}
