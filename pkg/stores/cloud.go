package stores

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/endpoint"
	"github.com/millfleet/mill/pkg/storage"
)

// Stores outside AWS: Google Cloud Storage (kind "gcs") and Azure Blob
// Storage (kind "azure"). Their credentials are named by reference, never
// written in the file:
//
//   - gcs: a bucket and a prefix. Reached with Application Default
//     Credentials (workload identity on GKE, the metadata server, or
//     GOOGLE_APPLICATION_CREDENTIALS) — sent only to Google's endpoint
//     unless "ambientCredentials": true —, with the service-account key
//     file "serviceAccountFile" names (an absolute path), or, for an
//     emulator's "endpoint", with "anonymous": true.
//   - azure: a "storageAccount", a "container" and a prefix. Reached with
//     the connection string held by the environment variable
//     "connectionStringEnv" names (never the string itself: a value that
//     is not a variable name is refused), or with the machine's managed
//     identity ("managedIdentity": true; "managedIdentityClientId" for a
//     user-assigned one). The endpoint is the connection string's (an
//     "endpoint" in the file must then be the same), else "endpoint" or
//     Azure's.
//
// Endpoints obey the S3 stores' rules (pkg/endpoint): https, plain http
// only to a loopback host or with "allowInsecureEndpoint": true, never a
// link-local or metadata address. "region" is the store's location, for
// the record; the clients do not use it.
//
//	{"id": "5", "kind": "gcs", "bucket": "acct1-copy", "prefix": "mill/", "serviceAccountFile": "/etc/mill/gcs.json"},
//	{"id": "6", "kind": "azure", "storageAccount": "acct1copy", "container": "mill", "connectionStringEnv": "MILL_AZURE_ACCT1"}

// googleEndpoint is GCS's own JSON API endpoint.
const googleEndpoint = "https://storage.googleapis.com"

// cloudFields are the store fields of the kinds outside AWS, and the kinds
// each belongs to.
var cloudFields = []struct {
	name  string
	kinds []storage.Kind
	set   func(Store) bool
}{
	{"serviceAccountFile", []storage.Kind{storage.KindGCS}, func(s Store) bool { return s.ServiceAccountFile != "" }},
	{"anonymous", []storage.Kind{storage.KindGCS}, func(s Store) bool { return s.Anonymous }},
	{"storageAccount", []storage.Kind{storage.KindAzure}, func(s Store) bool { return s.StorageAccount != "" }},
	{"container", []storage.Kind{storage.KindAzure}, func(s Store) bool { return s.Container != "" }},
	{"connectionStringEnv", []storage.Kind{storage.KindAzure}, func(s Store) bool { return s.ConnectionStringEnv != "" }},
	{"managedIdentity", []storage.Kind{storage.KindAzure}, func(s Store) bool { return s.ManagedIdentity }},
	{"managedIdentityClientId", []storage.Kind{storage.KindAzure}, func(s Store) bool { return s.ManagedIdentityClientID != "" }},
	// The s3 fields that mean nothing outside AWS.
	{"roleArn", []storage.Kind{storage.KindS3}, func(s Store) bool { return s.RoleARN != "" }},
	{"profile", []storage.Kind{storage.KindS3}, func(s Store) bool { return s.Profile != "" }},
	{"root", []storage.Kind{storage.KindFS}, func(s Store) bool { return s.Root != "" }},
	{"listSpillDir", []storage.Kind{storage.KindFS}, func(s Store) bool { return s.ListSpillDir != "" }},
}

// cloudFieldProblems lists the fields of the kinds outside AWS that s sets
// but its kind does not take (for s3 and fs stores, only the new fields:
// storeProblems checks the rest).
func cloudFieldProblems(s Store) []string {
	var out []string
	cloud := s.Kind == storage.KindGCS || s.Kind == storage.KindAzure
	for _, f := range cloudFields {
		if !f.set(s) || slices.Contains(f.kinds, s.Kind) {
			continue
		}
		if !cloud && (f.kinds[0] == storage.KindS3 || f.kinds[0] == storage.KindFS) {
			continue
		}
		out = append(out, fmt.Sprintf("%s is for %s stores, not %s", f.name, f.kinds[0], s.Kind))
	}
	return out
}

// The shapes of cloud names. A long counted repetition ({1,220}) compiles
// to a program of that many steps, held by every process from its start
// (370 KB for the three below): the lengths are checked apart instead.
var (
	gcsBucket      = sized{regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*[a-z0-9]$`), 3, 222, ""}
	azureAccount   = regexp.MustCompile(`^[a-z0-9]{3,24}$`)
	azureContainer = sized{regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`), 3, 63, "-"} // 3 to 63 letters and digits, single hyphens between
	envName        = sized{regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`), 1, 128, ""}
	clientID       = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// sized is a name of pattern re whose length, not counting the
// characters of skip, is within min..max.
type sized struct {
	re       *regexp.Regexp
	min, max int
	skip     string
}

func (s sized) MatchString(v string) bool {
	n := len(v)
	if s.skip != "" {
		n -= strings.Count(v, s.skip)
	}
	return n >= s.min && n <= s.max && s.re.MatchString(v)
}

// gcsProblems lists what is wrong with a gcs store's fields.
func gcsProblems(s Store) []string {
	out := cloudFieldProblems(s)
	switch {
	case s.Bucket == "":
		out = append(out, "a gcs store needs a bucket")
	case !gcsBucket.MatchString(s.Bucket) || strings.Contains(s.Bucket, ".."):
		out = append(out, fmt.Sprintf("bucket %q is not a GCS bucket name (3 to 222 lower-case letters, digits, '.', '-', '_')", s.Bucket))
	}
	if strings.HasPrefix(s.Prefix, "/") {
		out = append(out, fmt.Sprintf("prefix %q must not start with /", s.Prefix))
	}
	out = append(out, endpointProblems(s)...)
	if f := s.ServiceAccountFile; f != "" && (!filepath.IsAbs(f) || slices.Contains(strings.Split(filepath.ToSlash(f), "/"), "..")) {
		out = append(out, fmt.Sprintf("serviceAccountFile %q: want an absolute path without a \"..\" segment", f))
	}
	named := 0
	for _, b := range []bool{s.ServiceAccountFile != "", s.Anonymous, s.AmbientCredentials} {
		if b {
			named++
		}
	}
	google := s.Endpoint == "" || strings.TrimSuffix(s.Endpoint, "/") == googleEndpoint
	switch {
	case named > 1:
		out = append(out, "serviceAccountFile, anonymous, ambientCredentials: name one")
	case s.Anonymous && google:
		out = append(out, "anonymous is for an emulator's endpoint, not Google's")
	case named == 0 && !google:
		out = append(out, fmt.Sprintf("endpoint %q is not Google's: name the credentials it gets (\"serviceAccountFile\", or \"anonymous\": true for an emulator), or set \"ambientCredentials\": true to send it the default credentials", s.Endpoint))
	}
	return out
}

// azureProblems lists what is wrong with an azure store's fields.
func azureProblems(s Store) []string {
	out := cloudFieldProblems(s)
	for k, v := range map[string]string{"bucket": s.Bucket} {
		if v != "" {
			out = append(out, k+" is for s3 and gcs stores, not azure (an azure store has a storageAccount and a container)")
		}
	}
	if s.AmbientCredentials {
		out = append(out, "ambientCredentials is not for azure stores: name connectionStringEnv or managedIdentity")
	}
	if !azureAccount.MatchString(s.StorageAccount) {
		out = append(out, fmt.Sprintf("storageAccount %q is not a storage account name (3 to 24 lower-case letters and digits)", s.StorageAccount))
	}
	if !azureContainer.MatchString(s.Container) {
		out = append(out, fmt.Sprintf("container %q is not a container name (3 to 63 lower-case letters, digits and single hyphens)", s.Container))
	}
	if strings.HasPrefix(s.Prefix, "/") {
		out = append(out, fmt.Sprintf("prefix %q must not start with /", s.Prefix))
	}
	out = append(out, endpointProblems(s)...)
	switch {
	case s.ConnectionStringEnv != "" && s.ManagedIdentity:
		out = append(out, "connectionStringEnv and managedIdentity: name one")
	case s.ConnectionStringEnv == "" && !s.ManagedIdentity:
		out = append(out, "an azure store names how it is reached: \"connectionStringEnv\" (the environment variable holding the connection string) or \"managedIdentity\": true")
	case s.ConnectionStringEnv != "" && !envName.MatchString(s.ConnectionStringEnv):
		// Never quote it: it may be the secret itself.
		out = append(out, "connectionStringEnv must name an environment variable (letters, digits, '_'), not hold the connection string: accounts.json holds no secrets")
	}
	if s.ManagedIdentityClientID != "" && (!s.ManagedIdentity || !clientID.MatchString(s.ManagedIdentityClientID)) {
		out = append(out, fmt.Sprintf("managedIdentityClientId %q: want the client ID (a GUID) of a user-assigned identity, with managedIdentity", s.ManagedIdentityClientID))
	}
	return out
}

// endpointProblems checks a store's endpoint by pkg/endpoint's rules.
func endpointProblems(s Store) []string {
	switch {
	case s.Endpoint != "":
		if err := endpoint.Check(s.Endpoint, s.AllowInsecureEndpoint); err != nil {
			return []string{err.Error()}
		}
	case s.AllowInsecureEndpoint:
		return []string{"allowInsecureEndpoint needs an endpoint"}
	}
	return nil
}

// cloudLocation returns the location of a gcs or azure store (unique.go):
// the service (Google's or Azure's, else the endpoint's host and port),
// the bucket or the account and container, and the prefix.
func cloudLocation(s Store) (location, bool) {
	service := string(s.Kind)
	if s.Endpoint != "" && strings.TrimSuffix(s.Endpoint, "/") != googleEndpoint {
		service += " " + serviceOf(s)
	}
	switch s.Kind {
	case storage.KindGCS:
		if !gcsBucket.MatchString(s.Bucket) {
			return location{}, false
		}
		return location{ns: service + " " + s.Bucket, path: s.Prefix}, true
	case storage.KindAzure:
		if !azureAccount.MatchString(s.StorageAccount) || !azureContainer.MatchString(s.Container) {
			return location{}, false
		}
		return location{ns: "azure " + s.StorageAccount + " " + s.Container, path: s.Prefix}, true
	}
	return location{}, false
}

// describeCloud shows a gcs or azure store's location.
func describeCloud(s Store) string {
	d := fmt.Sprintf("gs://%s/%s", s.Bucket, s.Prefix)
	if s.Kind == storage.KindAzure {
		d = fmt.Sprintf("azure://%s/%s/%s", s.StorageAccount, s.Container, s.Prefix)
	}
	if s.Endpoint != "" {
		d += " at " + s.Endpoint
	}
	return d
}

// openCloud opens a gcs or azure store with the configured constructor,
// after checking its fields again (a registry built in code need not have
// been parsed).
func (o *Opener) openCloud(ctx context.Context, s Store) (storage.Provider, error) {
	open, problems := o.cfg.GCS, gcsProblems(s)
	if s.Kind == storage.KindAzure {
		open, problems = o.cfg.Azure, azureProblems(s)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	if open == nil {
		return nil, fmt.Errorf("no %s provider constructor configured (OpenerConfig)", s.Kind)
	}
	return open(ctx, s)
}
