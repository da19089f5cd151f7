package stores_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/stores"
)

// TestDuraCloudLayoutStores: a store with "layout": "duracloud" is parsed
// with its account prefix, its fields are checked, and its space buckets
// are a location no other store may share.
func TestDuraCloudLayoutStores(t *testing.T) {
	const ddc = `{"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPLE", "bucket": "mill-books"}`
	r, err := stores.Parse("r.json", []byte(registry([]string{ddc})))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Store("a1", "1"); s.Layout != "duracloud" || s.AccountPrefix != "AKIAIOSFODNN7EXAMPLE" {
		t.Errorf("parsed store: %+v", s)
	}
	for _, tc := range []struct {
		name   string
		stores []string
		want   string // in the error
	}{
		{"unknown layout", []string{`{"id": "1", "primary": true, "kind": "s3", "layout": "fedora", "bucket": "b"}`}, `unknown layout "fedora"`},
		{"short prefix", []string{`{"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIA", "bucket": "b"}`}, `accountPrefix "AKIA" is not 20`},
		{"prefix with a dot", []string{`{"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMP.E", "bucket": "b"}`}, `is not 20`},
		{"no prefix", []string{`{"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "bucket": "b"}`}, `accountPrefix "" is not 20`},
		{"prefix without the layout", []string{`{"id": "1", "primary": true, "kind": "s3", "accountPrefix": "AKIAIOSFODNN7EXAMPLE", "bucket": "b"}`}, `accountPrefix is for stores with "layout": "duracloud"`},
		{"layout on fs", []string{`{"id": "1", "primary": true, "kind": "fs", "root": "/srv/x", "layout": "duracloud"}`}, `layout is for s3 stores, not fs`},
		{"bookkeeping in a space bucket", []string{`{"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPLE", "bucket": "akiaiosfodnn7example.books"}`}, `is named like one of the store's space buckets`},
		{"two stores of one account prefix", []string{ddc, `{"id": "2", "kind": "s3", "layout": "duracloud", "accountPrefix": "akiaiosfodnn7example", "bucket": "other-books"}`},
			`account "a1" store "2" (s3://other-books/ and space buckets akiaiosfodnn7example.*) is the same location as account "a1" store "1"`},
		{"a store in a space bucket", []string{ddc, `{"id": "2", "kind": "s3", "bucket": "akiaiosfodnn7example.space1", "prefix": "mill/"}`},
			`account "a1" store "2" (s3://akiaiosfodnn7example.space1/mill/) lies inside account "a1" store "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stores.Parse("r.json", []byte(registry(tc.stores)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
