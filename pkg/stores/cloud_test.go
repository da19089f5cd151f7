package stores_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/stores"
)

// TestCloudStoreRules: gcs and azure stores name their location and their
// credentials by reference, obey the S3 stores' endpoint rules, and every
// problem is reported at the store's line and column.
func TestCloudStoreRules(t *testing.T) {
	doc := func(fields string) string {
		return "{\"accounts\": [{\"id\": \"a\", \"stores\": [\n  {\"id\": \"p\", \"primary\": true, \"kind\": \"fs\", \"root\": \"/srv/p\"},\n  {\"id\": \"1\"" + fields + "}]}]}"
	}
	const at = `r.json:3:3: account "a" store "1": `
	for _, tc := range []struct{ name, fields, want string }{
		// gcs
		{"gcs, ADC", `, "kind": "gcs", "bucket": "acct1-copy", "prefix": "mill/"`, ``},
		{"gcs, key file", `, "kind": "gcs", "bucket": "acct1-copy", "serviceAccountFile": "/etc/mill/gcs.json"`, ``},
		{"gcs, emulator", `, "kind": "gcs", "bucket": "b12", "endpoint": "http://127.0.0.1:4443", "anonymous": true`, ``},
		{"gcs, no bucket", `, "kind": "gcs"`, at + `a gcs store needs a bucket`},
		{"gcs, bad bucket", `, "kind": "gcs", "bucket": "Bad/Bucket"`, at + `bucket "Bad/Bucket" is not a GCS bucket name`},
		{"gcs, relative key file", `, "kind": "gcs", "bucket": "b12", "serviceAccountFile": "gcs.json"`, at + `serviceAccountFile "gcs.json": want an absolute path`},
		{"gcs, key file with ..", `, "kind": "gcs", "bucket": "b12", "serviceAccountFile": "/etc/../root/k.json"`, `without a ".." segment`},
		{"gcs, anonymous to Google", `, "kind": "gcs", "bucket": "b12", "anonymous": true`, at + `anonymous is for an emulator's endpoint, not Google's`},
		{"gcs, emulator without credentials named", `, "kind": "gcs", "bucket": "b12", "endpoint": "http://127.0.0.1:4443"`, at + `endpoint "http://127.0.0.1:4443" is not Google's: name the credentials`},
		{"gcs, plain http elsewhere", `, "kind": "gcs", "bucket": "b12", "endpoint": "http://gcs.example.org", "anonymous": true`, at + `endpoint "http://gcs.example.org" is plain http`},
		{"gcs, metadata address", `, "kind": "gcs", "bucket": "b12", "endpoint": "https://169.254.169.254", "anonymous": true`, `link-local or metadata address`},
		{"gcs, two ways in", `, "kind": "gcs", "bucket": "b12", "endpoint": "https://gcs.example.org", "anonymous": true, "serviceAccountFile": "/k.json"`, `name one`},
		{"gcs, s3 fields", `, "kind": "gcs", "bucket": "b12", "roleArn": "arn:aws:iam::1:role/r"`, at + `roleArn is for s3 stores, not gcs`},
		{"gcs, azure fields", `, "kind": "gcs", "bucket": "b12", "container": "c12"`, at + `container is for azure stores, not gcs`},
		// azure
		{"azure, connection string", `, "kind": "azure", "storageAccount": "acct1copy", "container": "mill", "connectionStringEnv": "MILL_AZURE_ACCT1"`, ``},
		{"azure, managed identity", `, "kind": "azure", "storageAccount": "acct1copy", "container": "mill", "managedIdentity": true, "managedIdentityClientId": "0b9f3f8e-7d8c-4c5a-9e1b-2f3a4b5c6d7e"`, ``},
		{"azure, no way in", `, "kind": "azure", "storageAccount": "acct1copy", "container": "mill"`, at + `an azure store names how it is reached`},
		{"azure, both ways in", `, "kind": "azure", "storageAccount": "acct1copy", "container": "mill", "managedIdentity": true, "connectionStringEnv": "X"`, `connectionStringEnv and managedIdentity: name one`},
		{"azure, bad account", `, "kind": "azure", "storageAccount": "Acct_1", "container": "mill", "managedIdentity": true`, at + `storageAccount "Acct_1" is not a storage account name`},
		{"azure, bad container", `, "kind": "azure", "storageAccount": "acct1", "container": "a--b", "managedIdentity": true`, at + `container "a--b" is not a container name`},
		{"azure, bucket", `, "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true, "bucket": "b"`, `bucket is for s3 and gcs stores, not azure`},
		{"azure, http endpoint", `, "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true, "endpoint": "http://blob.example.org"`, `is plain http`},
		{"azure, client id without managed identity", `, "kind": "azure", "storageAccount": "acct1", "container": "mill", "connectionStringEnv": "X", "managedIdentityClientId": "0b9f3f8e-7d8c-4c5a-9e1b-2f3a4b5c6d7e"`, `managedIdentityClientId`},
		{"azure, ambient", `, "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true, "ambientCredentials": true`, `ambientCredentials is not for azure stores`},
		// s3 and fs stores take none of the new fields.
		{"s3 with a container", `, "kind": "s3", "bucket": "b12", "container": "c12"`, at + `container is for azure stores, not s3`},
		{"fs with a key file", `, "kind": "fs", "root": "/srv/x", "serviceAccountFile": "/k.json"`, at + `serviceAccountFile is for gcs stores, not fs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stores.Parse("r.json", []byte(doc(tc.fields)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v\nwant %q", err, tc.want)
			}
		})
	}
}

// TestConnectionStringNeverInTheFile: a connection string pasted where
// the name of its environment variable belongs is refused, and the error
// does not repeat it.
func TestConnectionStringNeverInTheFile(t *testing.T) {
	secret := "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=c2VjcmV0LWtleS1kby1ub3QtbG9n"
	doc := `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "azure", "storageAccount": "acct1", "container": "mill", "connectionStringEnv": "` + secret + `"}]}]}`
	_, err := stores.Parse("r.json", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "must name an environment variable") {
		t.Fatalf("error %v, want the connection string refused", err)
	}
	if strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("the error repeats the secret: %v", err)
	}
	for _, key := range []string{"connectionString", "accountKey", "sasToken"} {
		doc := `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true, "` + key + `": "x"}]}]}`
		if _, err := stores.Parse("r.json", []byte(doc)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want the key refused", key, err)
		}
	}
}

// TestCloudStoresUnique: two gcs stores on one bucket, or two azure stores
// on one container, may not share or nest a prefix; the same names on
// other services or kinds do not collide.
func TestCloudStoresUnique(t *testing.T) {
	reg := func(a, b string) string {
		return `{"accounts": [{"id": "a", "stores": [{"id": "p", "primary": true, "kind": "fs", "root": "/srv/p"},` + a + `,` + b + `]}]}`
	}
	gcs := func(id, fields string) string {
		return `{"id": "` + id + `", "kind": "gcs", "bucket": "shared"` + fields + `}`
	}
	az := func(id, fields string) string {
		return `{"id": "` + id + `", "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true` + fields + `}`
	}
	for _, tc := range []struct {
		name, a, b string
		collide    bool
	}{
		{"gcs same bucket", gcs("1", ""), gcs("2", ""), true},
		{"gcs nested prefix", gcs("1", `, "prefix": "a/"`), gcs("2", `, "prefix": "a/b/"`), true},
		{"gcs apart", gcs("1", `, "prefix": "a/"`), gcs("2", `, "prefix": "b/"`), false},
		{"gcs on an emulator", gcs("1", ""), gcs("2", `, "endpoint": "http://127.0.0.1:4443", "anonymous": true`), false},
		{"gcs and s3 same name", gcs("1", ""), `{"id": "2", "kind": "s3", "bucket": "shared"}`, false},
		{"azure same container", az("1", ""), az("2", ""), true},
		{"azure nested", az("1", ""), az("2", `, "prefix": "x/"`), true},
		{"azure apart", az("1", `, "prefix": "x/"`), az("2", `, "prefix": "y/"`), false},
	} {
		_, err := stores.Parse("r.json", []byte(reg(tc.a, tc.b)))
		if got := err != nil && strings.Contains(err.Error(), "no two stores may share or nest a location"); got != tc.collide {
			t.Errorf("%s: collision %v, want %v (%v)", tc.name, got, tc.collide, err)
		}
	}
}
