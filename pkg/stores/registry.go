// Package stores is Mill's account and store registry (docs/ARCHITECTURE.md,
// Stores and storage providers): which accounts exist, whether they are
// active, and where each of their stores lives. It is read from accounts.json
// in the config bucket or a local file, and an Opener turns a registered
// store into a storage.Provider.
//
// accounts.json must be UTF-8 without a byte order mark and at most
// MaxFileSize bytes; every error names the file, line and column.
//
// The file holds no secrets: S3 stores are reached with the credentials of
// the AWS SDK's default chain, with a role assumed through STS (roleArn),
// or with a named profile of the shared AWS config files (profile). Fields
// that look like credentials are rejected.
//
// Endpoints: a store on an S3-compatible service names its "endpoint". It
// must be https, except to a loopback host or with "allowInsecureEndpoint":
// true (an emulator), and never a link-local or cloud metadata address
// (checked again on every connection: see pkg/endpoint). The default
// chain's credentials go only to AWS endpoints: a store whose endpoint is
// not AWS's names the credentials it gets (roleArn or profile), or says
// "ambientCredentials": true.
//
//	{
//	  "accounts": [
//	    {
//	      "id": "account1",
//	      "status": "active",
//	      "stores": [
//	        {"id": "1", "primary": true, "kind": "s3", "bucket": "acct1-primary", "region": "us-east-1"},
//	        {"id": "2", "kind": "s3", "bucket": "acct1-replica", "prefix": "mill/", "region": "us-west-2",
//	         "roleArn": "arn:aws:iam::123456789012:role/mill-replica"},
//	        {"id": "3", "kind": "s3", "bucket": "archive", "endpoint": "https://s3.example.org", "profile": "archive"},
//	        {"id": "4", "kind": "fs", "root": "/srv/mill/account1-4"}
//	      ]
//	    }
//	  ]
//	}
package stores

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/endpoint"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// FileName is the registry's file name in the config bucket.
const FileName = "accounts.json"

// Status of an account.
type Status string

// Account statuses. An inactive account keeps its stores in the registry
// but is skipped by the producers.
const (
	StatusActive   Status = "active"
	StatusInactive Status = "inactive"
)

// Store is one store of an account.
type Store struct {
	ID      string       `json:"id"`
	Primary bool         `json:"primary,omitempty"`
	Kind    storage.Kind `json:"kind"`
	// S3 stores.
	Bucket string `json:"bucket,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Region string `json:"region,omitempty"`
	// Endpoint overrides the S3 endpoint (an S3-compatible service); it
	// implies path-style addressing. It must be https — plain http only to
	// a loopback host or with AllowInsecureEndpoint — and never a
	// link-local or metadata address (pkg/endpoint).
	Endpoint string `json:"endpoint,omitempty"`
	// AllowInsecureEndpoint allows a plain-http Endpoint on a host that is
	// not loopback (an emulator elsewhere on the network).
	AllowInsecureEndpoint bool `json:"allowInsecureEndpoint,omitempty"`
	// RoleARN, when set, is assumed through STS to reach the store.
	RoleARN string `json:"roleArn,omitempty"`
	// Profile, when set, names a profile of the shared AWS config and
	// credentials files whose credentials reach the store.
	Profile string `json:"profile,omitempty"`
	// AmbientCredentials sends the default chain's credentials to an
	// Endpoint that is not AWS's. Without it such a store must name its
	// credentials (RoleARN or Profile): the process's own credentials go
	// only to AWS endpoints.
	AmbientCredentials bool `json:"ambientCredentials,omitempty"`
	// Root is the directory of an fs store.
	Root string `json:"root,omitempty"`
}

// Account is one account and its stores.
type Account struct {
	ID     string  `json:"id"`
	Status Status  `json:"status"`
	Stores []Store `json:"stores"`
}

// Active reports whether the account is active.
func (a *Account) Active() bool { return a.Status == StatusActive }

// Primary returns the account's primary store, or nil.
func (a *Account) Primary() *Store {
	for i := range a.Stores {
		if a.Stores[i].Primary {
			return &a.Stores[i]
		}
	}
	return nil
}

// Store returns the store with id, or nil.
func (a *Account) Store(id string) *Store {
	for i := range a.Stores {
		if a.Stores[i].ID == id {
			return &a.Stores[i]
		}
	}
	return nil
}

// Registry is the parsed accounts.json.
type Registry struct {
	Accounts []Account `json:"accounts"`
}

// Errors of lookups.
var (
	ErrUnknownAccount = errors.New("stores: unknown account")
	ErrUnknownStore   = errors.New("stores: unknown store")
)

// Account returns the account with id, or nil.
func (r *Registry) Account(id string) *Account {
	for i := range r.Accounts {
		if r.Accounts[i].ID == id {
			return &r.Accounts[i]
		}
	}
	return nil
}

// ActiveAccounts returns the active accounts in file order.
func (r *Registry) ActiveAccounts() []*Account {
	var out []*Account
	for i := range r.Accounts {
		if r.Accounts[i].Active() {
			out = append(out, &r.Accounts[i])
		}
	}
	return out
}

// Store returns a store of an account; the errors wrap ErrUnknownAccount or
// ErrUnknownStore.
func (r *Registry) Store(account, storeID string) (*Store, error) {
	a := r.Account(account)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAccount, account)
	}
	s := a.Store(storeID)
	if s == nil {
		return nil, fmt.Errorf("%w %q of account %q", ErrUnknownStore, storeID, account)
	}
	return s, nil
}

// Known returns a function reporting whether a store id is registered for
// account (for policy.Policy.Check).
func (r *Registry) Known(account string) func(storeID string) bool {
	return func(id string) bool {
		_, err := r.Store(account, id)
		return err == nil
	}
}

// Marshal writes the registry in the accounts.json format.
func (r *Registry) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	w := *r
	if w.Accounts == nil {
		w.Accounts = []Account{}
	}
	for i := range w.Accounts {
		if w.Accounts[i].Stores == nil {
			w.Accounts = slices.Clone(w.Accounts)
			w.Accounts[i].Stores = []Store{}
		}
	}
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("stores: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

// Validate checks a registry built in code the way Parse checks a file.
func (r *Registry) Validate() error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	_, err = Parse("registry", b)
	return err
}

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
// store's kind, a malformed endpoint or role ARN, and an active account
// without exactly one primary store (an inactive one may have none, never
// several).
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
			}
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
	if err := w.End(); err != nil {
		return nil, err
	}
	if err := w.EndOfDocument(); err != nil {
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
	off int64
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
	type storeAt struct {
		s   Store
		off int64
	}
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
				s, soff, serrs, err := parseStore(w)
				if err != nil {
					return a, nil, err
				}
				errs = append(errs, serrs...)
				stores = append(stores, storeAt{s, soff})
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
		if s.Primary {
			primaries = append(primaries, st.off)
		}
		a.Stores = append(a.Stores, s)
	}
	switch {
	case len(primaries) > 1:
		errs = append(errs, w.Errorf(primaries[1], "%s: more than one primary store", label))
	case len(primaries) == 0 && a.Status == StatusActive:
		errs = append(errs, w.Errorf(off, "%s: an active account needs exactly one primary store (none is marked \"primary\": true)", label))
	}
	return a, errs, nil
}

func parseStore(w *jsonpos.Walker) (Store, int64, []error, error) {
	var s Store
	off, err := w.Delim('{', "a store")
	if err != nil {
		return s, off, nil, err
	}
	var errs []error
	have := map[string]bool{}
	str := map[string]*string{
		"id": &s.ID, "bucket": &s.Bucket, "prefix": &s.Prefix, "region": &s.Region,
		"endpoint": &s.Endpoint, "roleArn": &s.RoleARN, "profile": &s.Profile, "root": &s.Root,
	}
	flags := map[string]*bool{
		"primary": &s.Primary, "allowInsecureEndpoint": &s.AllowInsecureEndpoint, "ambientCredentials": &s.AmbientCredentials,
	}
	for w.More() {
		key, koff, err := w.String("key")
		if err != nil {
			return s, off, nil, err
		}
		if have[key] {
			errs = append(errs, w.Errorf(koff, "store: key %q appears twice", key))
		}
		have[key] = true
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
				errs = append(errs, w.Errorf(koff, "store: unknown key %q (want id, primary, kind, bucket, prefix, region, endpoint, allowInsecureEndpoint, roleArn, profile, ambientCredentials, root)", key))
			}
			if err := w.Skip(); err != nil {
				return s, off, nil, err
			}
		}
	}
	if err := w.End(); err != nil {
		return s, off, nil, err
	}
	return s, off, errs, nil
}

// storeProblems lists what is wrong with one store's fields.
func storeProblems(s Store) []string {
	var out []string
	switch s.Kind {
	case storage.KindS3:
		if s.Bucket == "" {
			out = append(out, "an s3 store needs a bucket")
		}
		if s.Root != "" {
			out = append(out, "root is for fs stores, not s3")
		}
		if strings.HasPrefix(s.Prefix, "/") {
			out = append(out, fmt.Sprintf("prefix %q must not start with /", s.Prefix))
		}
		if s.RoleARN != "" && (!strings.HasPrefix(s.RoleARN, "arn:") || !strings.Contains(s.RoleARN, ":role/")) {
			out = append(out, fmt.Sprintf("roleArn %q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", s.RoleARN))
		}
		out = append(out, s.accessProblems()...)
	case storage.KindFS:
		if s.Root == "" {
			out = append(out, "an fs store needs a root directory")
		}
		for k, v := range map[string]string{"bucket": s.Bucket, "prefix": s.Prefix, "region": s.Region, "endpoint": s.Endpoint, "roleArn": s.RoleARN, "profile": s.Profile} {
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
	case "":
		out = append(out, `missing kind (want "s3" or "fs")`)
	default:
		out = append(out, fmt.Sprintf(`unknown kind %q (want "s3" or "fs")`, s.Kind))
	}
	return out
}

// Access is how an s3 store is reached: stores with equal Access can share
// one S3 client (and copy between them server-side).
type Access struct {
	Region, Endpoint, RoleARN, Profile        string
	AllowInsecureEndpoint, AmbientCredentials bool
}

// Access returns how s is reached.
func (s Store) Access() Access {
	return Access{Region: s.Region, Endpoint: s.Endpoint, RoleARN: s.RoleARN, Profile: s.Profile,
		AllowInsecureEndpoint: s.AllowInsecureEndpoint, AmbientCredentials: s.AmbientCredentials}
}

// accessProblems lists what is wrong with how an s3 store is reached: its
// endpoint (pkg/endpoint's rules) and which credentials it gets.
func (s Store) accessProblems() []string {
	var out []string
	if s.Endpoint != "" {
		if err := endpoint.Check(s.Endpoint, s.AllowInsecureEndpoint); err != nil {
			out = append(out, err.Error())
		}
	} else if s.AllowInsecureEndpoint {
		out = append(out, "allowInsecureEndpoint needs an endpoint")
	}
	if s.Profile != "" && (strings.ContainsFunc(s.Profile, func(r rune) bool { return r <= ' ' || r == 0x7f }) || len(s.Profile) > 128) {
		out = append(out, fmt.Sprintf("profile %q is not a profile name", s.Profile))
	}
	switch {
	case s.RoleARN != "" && s.Profile != "":
		out = append(out, "roleArn and profile: name one (a profile can assume a role itself: role_arn in the AWS config file)")
	case s.AmbientCredentials && (s.RoleARN != "" || s.Profile != ""):
		named := "roleArn"
		if s.Profile != "" {
			named = "profile"
		}
		out = append(out, fmt.Sprintf("ambientCredentials and %s: name one", named))
	case !s.ambientAllowed() && s.RoleARN == "" && s.Profile == "":
		out = append(out, fmt.Sprintf("endpoint %q is not an AWS endpoint: name the credentials it gets (\"roleArn\" or \"profile\"), or set \"ambientCredentials\": true to send it the default chain's", s.Endpoint))
	}
	return out
}

// ambientAllowed reports whether the default chain's credentials may be
// sent to the store: it is on AWS's own endpoints (none set, or an AWS
// one), or it says so.
func (s Store) ambientAllowed() bool {
	return s.Endpoint == "" || endpoint.AWS(s.Endpoint) || s.AmbientCredentials
}
