// Package stores is Mill's account and store registry (docs/ARCHITECTURE.md,
// Stores and storage providers): which accounts exist, whether they are
// active, and where each of their stores lives. It is read from accounts.json
// in the config bucket or a local file, and an Opener turns a registered
// store into a storage.Provider.
//
// accounts.json must be UTF-8 without a byte order mark and at most
// MaxFileSize bytes; every error names the file, line and column.
//
// Stores are unique: no two stores of the registry, of any accounts, may
// share or nest a location — the same bucket (on the same service) with
// equal or nested key prefixes, or one fs root at or inside another — and
// an fs root is absolute, not "/", without a ".." segment. unique.go says
// how locations compare.
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
// Listing spills: an fs store sorts the listing of a directory too large
// for memory (over about 60,000 13-byte names) in temporary files,
// unlinked at once, in its "listSpillDir" — by default os.TempDir(),
// which on a host whose /tmp is a tmpfs costs memory outside the process
// (about 15 MB a million names). It must be an absolute path to an existing directory,
// and never an fs store's root nor inside one (its own or another's,
// through symbolic links too), so that a spill never sits among content;
// stores may share one (spilldir.go).
//
// Places: a store may say where it is and who keeps it, for the evidence
// an auditor reads (millctl evidence pack, pkg/ndsa): "region" (on an s3
// store also the region the SDK signs for; on an fs store a label),
// "provider" and "threatZone" (stores that share a threatZone share their
// disaster threats: a flood plain, a fault line, a power grid). Each is a
// label of 1 to MaxPlaceLen ASCII letters, digits, '.', '-' and '_'
// (place.go), checked at the value's line and column.
//
// DuraCloud's layout: an s3 store with "layout": "duracloud" reads and
// writes spaces where DuraCloud's S3StorageProvider keeps them, a bucket
// per space named "accountPrefix" (lower-cased) + "." + the space ID, and
// keeps only Mill's bookkeeping in its bucket and prefix (s3store, DuraCloud
// layout). Its space buckets are a location of their own: two such stores
// with one account prefix on one service collide, and so does a store
// whose bucket is one of them.
//
// Fixity targets: a store's optional "fixity" object sets the interval
// within which each of its copies must get a fresh fixity verdict
// ("interval", default 90 days; "archivedInterval" for copies in an
// archival storage class, default 365 days; a Go duration or whole days,
// "90d"), how archived copies are verified ("archivedMethod":
// compute-checksum, the default on s3, restore, or none, which must be
// written out and leaves them not covered) and the share of copies a run
// checks ("sampleRate", more than 0 and at most 1; default 1). An fs store
// has no archival storage class: it takes no archivedInterval and no
// archivedMethod but none. Store.FixityTarget fills in the defaults.
//
// Stores outside AWS: kind "gcs" (a Google Cloud Storage bucket and
// prefix) and kind "azure" (a storage account's container and a prefix),
// with the same endpoint rules and credentials by reference — a key
// file's path, workload or managed identity, or the name of the
// environment variable holding a connection string (cloud.go).
//
//	{
//	  "accounts": [
//	    {
//	      "id": "account1",
//	      "status": "active",
//	      "stores": [
//	        {"id": "1", "primary": true, "kind": "s3", "bucket": "acct1-primary", "region": "us-east-1"},
//	        {"id": "2", "kind": "s3", "bucket": "acct1-replica", "prefix": "mill/", "region": "us-west-2",
//	         "roleArn": "arn:aws:iam::123456789012:role/mill-replica",
//	         "fixity": {"interval": "30d", "archivedInterval": "180d", "archivedMethod": "compute-checksum"}},
//	        {"id": "3", "kind": "s3", "bucket": "archive", "endpoint": "https://s3.example.org", "profile": "archive",
//	         "fixity": {"archivedMethod": "none", "sampleRate": 0.5}},
//	        {"id": "4", "kind": "fs", "root": "/srv/mill/account1-4", "listSpillDir": "/var/tmp/mill", "fixity": {"interval": "2160h"},
//	         "region": "eu-central", "provider": "on-premises", "threatZone": "rhine-valley"},
//	        {"id": "5", "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPLE",
//	         "bucket": "acct1-mill-bookkeeping", "region": "us-east-1"}
//	      ]
//	    }
//	  ]
//	}
package stores

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/millfleet/mill/internal/base/permanent"
	"github.com/millfleet/mill/pkg/storage"
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
	// Region is an s3 store's AWS region (its bucket's location; the
	// SDK's default when empty); on an fs store, where its disk is (a
	// label only).
	Region string `json:"region,omitempty"`
	// Layout is how an s3 store keeps its spaces: "" (Mill's: the bucket
	// and prefix hold them all) or "duracloud" (DuraCloud's: a bucket per
	// space, AccountPrefix + "." + space ID; the bucket and prefix then
	// hold only Mill's trash copies and temporary uploads). See s3store.
	Layout string `json:"layout,omitempty"`
	// AccountPrefix is the 20-character prefix of a duracloud store's
	// space buckets (the access key ID DuraCloud was configured with).
	AccountPrefix string `json:"accountPrefix,omitempty"`
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
	// ListSpillDir is where an fs store sorts the listing of a directory
	// too large for memory, in temporary files unlinked at once (default
	// os.TempDir()): an absolute path to an existing directory outside
	// every fs store's root (spilldir.go).
	ListSpillDir string `json:"listSpillDir,omitempty"`
	// Provider names who keeps the store's bytes ("aws", "wasabi",
	// "on-premises") and ThreatZone the disaster threats it shares with
	// other stores ("us-east-coast"): labels an operator chooses, with
	// Region, so that an auditor can judge how diverse a space's copies
	// are (pkg/ndsa). Optional; Mill never reads them to reach a store.
	Provider   string `json:"provider,omitempty"`
	ThreatZone string `json:"threatZone,omitempty"`
	// Fixity is the store's fixity target as accounts.json writes it
	// (zero fields: unset); FixityTarget fills in the defaults.
	Fixity Fixity `json:"fixity,omitzero"`

	// Stores outside AWS (cloud.go). gcs: Bucket and Prefix as for s3,
	// reached with Application Default Credentials, the key file
	// ServiceAccountFile names, or (an emulator) anonymously.
	ServiceAccountFile string `json:"serviceAccountFile,omitempty"`
	Anonymous          bool   `json:"anonymous,omitempty"`
	// azure: a container of a storage account, reached with the
	// connection string in the environment variable ConnectionStringEnv
	// names, or with the managed identity.
	StorageAccount          string `json:"storageAccount,omitempty"`
	Container               string `json:"container,omitempty"`
	ConnectionStringEnv     string `json:"connectionStringEnv,omitempty"`
	ManagedIdentity         bool   `json:"managedIdentity,omitempty"`
	ManagedIdentityClientID string `json:"managedIdentityClientId,omitempty"`
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

// Errors of lookups. Both say of themselves that retrying cannot help (a
// Permanent method, which processors.IsPermanent reads): a task naming an
// account or store the registry does not know is dead-lettered at once.
var (
	ErrUnknownAccount = permanent.New("stores: unknown account")
	ErrUnknownStore   = permanent.New("stores: unknown store")
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
