package stores_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

func TestParseExample(t *testing.T) {
	r, err := stores.LoadFile("../../testdata/accounts/accounts.json")
	if err != nil {
		t.Fatal(err)
	}
	a := r.Account("account1")
	if a == nil || !a.Active() || len(a.Stores) != 3 {
		t.Fatalf("account1 = %+v", a)
	}
	if p := a.Primary(); p == nil || p.ID != "1" || p.Bucket != "mill-account1-primary" {
		t.Fatalf("primary = %+v", p)
	}
	s, err := r.Store("account1", "2")
	if err != nil {
		t.Fatal(err)
	}
	want := stores.Store{ID: "2", Kind: storage.KindS3, Bucket: "mill-account1-replica", Prefix: "mill/", Region: "us-west-2", RoleARN: "arn:aws:iam::123456789012:role/mill-replica"}
	if *s != want {
		t.Fatalf("store 2 = %+v", s)
	}
	if r.Account("account2").Active() || len(r.ActiveAccounts()) != 3 { // account1, acme, globex
		t.Fatal("account2 must be inactive")
	}
	if _, err := r.Store("nobody", "1"); !errors.Is(err, stores.ErrUnknownAccount) {
		t.Fatal(err)
	}
	if _, err := r.Store("account1", "9"); !errors.Is(err, stores.ErrUnknownStore) {
		t.Fatal(err)
	}
	known := r.Known("account1")
	if !known("3") || known("4") {
		t.Fatal("Known")
	}
	if _, err := stores.LoadFile("../../testdata/accounts/dev-accounts.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := stores.LoadFile("../../testdata/accounts/nope.json"); !errors.Is(err, stores.ErrNoRegistry) {
		t.Fatal(err)
	}
}

func TestParseInvalidNamesAccountStoreAndPosition(t *testing.T) {
	const f = "../../testdata/accounts/invalid/accounts.json"
	_, err := stores.LoadFile(f)
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		f + `:6:68: store: "secretAccessKey" looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or roleArn)`,
		f + `:7:9: account "account1": store id "1" appears twice`,
		f + `:7:9: account "account1" store "1": an fs store needs a root directory`,
		f + `:7:9: account "account1": more than one primary store`,
		f + `:8:9: account "account1" store "3": unknown kind "tape" (want "s3", "fs", "gcs" or "azure")`,
		f + `:13:17: account "account2": unknown status "paused" (want active or inactive)`,
	}
	got := strings.Split(err.Error(), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "{\"accounts\": [\n  {\"id\": \"a\",}]}", `r.json:2:13: trailing comma before '}'`},
		{"no primary", `{"accounts": [{"id": "a", "stores": [{"id": "1", "kind": "fs", "root": "/x"}]}]}`,
			`r.json:1:15: account "a": an active account needs exactly one primary store (none is marked "primary": true)`},
		{"inactive without primary is fine", `{"accounts": [{"id": "a", "status": "inactive", "stores": []}]}`, ``},
		{"top-level credential", `{"accounts": [], "aws_secret_access_key": "x"}`,
			`r.json:1:18: "aws_secret_access_key" looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or a store's roleArn)`},
		{"session token", `{"accounts": [{"id": "a", "status": "inactive", "stores": [{"id": "1", "kind": "s3", "bucket": "b", "sessionToken": "x"}]}]}`,
			`r.json:1:101: store: "sessionToken" looks like a credential: accounts.json holds no secrets (use the AWS SDK chain or roleArn)`},
		{"endpoint with password", `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "endpoint": "http://u:p@h", "profile": "p"}]}]}`,
			`r.json:1:38: account "a" store "1": endpoint must not carry credentials`},
		{"bad role", `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "roleArn": "mill"}]}]}`,
			`r.json:1:38: account "a" store "1": roleArn "mill" is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)`},
		{"fs with bucket", `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "/r", "bucket": "b"}]}]}`,
			`r.json:1:38: account "a" store "1": bucket is for s3 stores, not fs`},
		{"primary not bool", `{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": "yes", "kind": "fs", "root": "/r"}]}]}`,
			`r.json:1:15: account "a": an active account needs exactly one primary store (none is marked "primary": true)` + "\nr.json:1:61: primary must be true or false, not the string \"yes\""},
		{"duplicate account", `{"accounts": [{"id": "a", "status": "inactive"}, {"id": "a", "status": "inactive"}]}`,
			`r.json:1:50: account "a" appears twice`},
		{"no accounts key", `{}`, `r.json:1:1: missing key "accounts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stores.Parse("r.json", []byte(tc.doc))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	r, err := stores.LoadFile("../../testdata/accounts/accounts.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := stores.Parse("x", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b2, _ := r2.Marshal()
	if string(b) != string(b2) {
		t.Fatalf("round trip differs:\n%s\n%s", b, b2)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"accounts.json", "dev-accounts.json", "invalid/accounts.json"} {
		b, err := os.ReadFile("../../testdata/accounts/" + p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"accounts": [{"id": "a", "status": "inactive", "stores": [{"id": "1", "kind": "s3", "bucket": "b", "endpoint": "http://127.0.0.1:4566"}]}]}`))
	f.Add([]byte(`{"accounts": [{"id": "a", "stores": [{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "fixity": {"interval": "90d", "archivedInterval": "36h", "archivedMethod": "none", "sampleRate": 0.5}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := stores.Parse("f.json", data)
		if err != nil {
			for _, e := range unjoin(err) {
				var pe *jsonpos.Error
				if !errors.As(e, &pe) {
					t.Fatalf("error without position: %v", e)
				}
			}
			return
		}
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := stores.Parse("f.json", b)
		if err != nil {
			t.Fatalf("written registry does not parse: %v\n%s", err, b)
		}
		b2, _ := r2.Marshal()
		if string(b) != string(b2) {
			t.Fatalf("round trip differs:\n%s\n%s", b, b2)
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
