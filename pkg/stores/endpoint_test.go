package stores_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/stores"
)

// TestEndpointRules: a store endpoint is https (http only to loopback or
// with allowInsecureEndpoint), never a link-local or metadata address, and
// a store whose endpoint is not AWS names the credentials it gets. Before
// these rules every endpoint below was accepted, and the ambient
// credentials were sent to it.
func TestEndpointRules(t *testing.T) {
	store := func(fields string) string {
		return `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "s3", "bucket": "b"` + fields + `}]}]}`
	}
	for _, tc := range []struct{ name, fields, want string }{
		{"metadata service", `, "endpoint": "http://169.254.169.254/", "allowInsecureEndpoint": true, "ambientCredentials": true`,
			`endpoint "http://169.254.169.254/": 169.254.169.254 is a link-local or metadata address`},
		{"metadata service over https", `, "endpoint": "https://169.254.169.254/", "profile": "p"`,
			`endpoint "https://169.254.169.254/": 169.254.169.254 is a link-local or metadata address`},
		{"IPv6 metadata service", `, "endpoint": "https://[fd00:ec2::254]/", "profile": "p"`,
			`endpoint "https://[fd00:ec2::254]/": fd00:ec2::254 is a link-local or metadata address`},
		{"plain http", `, "endpoint": "http://s3.example.org", "profile": "p"`,
			`endpoint "http://s3.example.org" is plain http: use https`},
		{"custom endpoint, no credentials named", `, "endpoint": "https://s3.example.org"`,
			`endpoint "https://s3.example.org" is not an AWS endpoint: name the credentials it gets ("roleArn" or "profile"), or set "ambientCredentials": true to send it the default chain's`},
		{"emulator, no credentials named", `, "endpoint": "http://127.0.0.1:4566"`,
			`endpoint "http://127.0.0.1:4566" is not an AWS endpoint: name the credentials`},
		{"insecure without endpoint", `, "allowInsecureEndpoint": true`, `allowInsecureEndpoint needs an endpoint`},
		{"role and profile", `, "roleArn": "arn:aws:iam::1:role/r", "profile": "p"`, `roleArn and profile: name one`},
		{"ambient and profile", `, "endpoint": "https://s3.example.org", "profile": "p", "ambientCredentials": true`,
			`ambientCredentials and profile: name one`},
		{"profile with a space", `, "profile": "my profile"`, `profile "my profile" is not a profile name`},
		{"ambient not bool", `, "endpoint": "https://s3.example.org", "ambientCredentials": "yes"`, `ambientCredentials must be true or false`},
		// Accepted.
		{"AWS endpoint, ambient credentials", `, "endpoint": "https://s3.eu-west-1.amazonaws.com"`, ``},
		{"custom endpoint with a profile", `, "endpoint": "https://s3.example.org", "profile": "archive"`, ``},
		{"custom endpoint with a role", `, "endpoint": "https://s3.example.org", "roleArn": "arn:aws:iam::1:role/r"`, ``},
		{"emulator with ambient credentials", `, "endpoint": "http://127.0.0.1:4566", "ambientCredentials": true`, ``},
		{"emulator elsewhere", `, "endpoint": "http://localstack:4566", "allowInsecureEndpoint": true, "ambientCredentials": true`, ``},
		{"no endpoint, profile", `, "profile": "replica"`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stores.Parse("r.json", []byte(store(tc.fields)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v\nwant %q", err, tc.want)
			}
		})
	}
}

// The new fields round-trip and are for s3 stores only.
func TestEndpointFieldsRoundTrip(t *testing.T) {
	doc := `{"accounts": [{"id": "a", "stores": [
	  {"id": "1", "primary": true, "kind": "s3", "bucket": "b", "endpoint": "http://minio:9000", "allowInsecureEndpoint": true, "profile": "minio"},
	  {"id": "2", "kind": "s3", "bucket": "c", "endpoint": "http://127.0.0.1:4566", "ambientCredentials": true}]}]}`
	r, err := stores.Parse("r.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := r.Store("a", "1")
	s2, _ := r.Store("a", "2")
	if !s1.AllowInsecureEndpoint || s1.Profile != "minio" || s1.AmbientCredentials || !s2.AmbientCredentials {
		t.Fatalf("stores: %+v %+v", s1, s2)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err = stores.Parse("r.json", []byte(`{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "/r", "profile": "p", "ambientCredentials": true, "allowInsecureEndpoint": true}]}]}`))
	for _, want := range []string{"profile is for s3 stores", "ambientCredentials is for s3 stores", "allowInsecureEndpoint is for s3 stores"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fs store with s3 fields: %v; want %q", err, want)
		}
	}
}
