package s3store

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/storage"
)

// TestDuraCloudSpaceIDs holds ValidateDuraCloudSpaceID to the rules of
// DuraCloud's IdUtil.validateSpaceId, and the store to them plus Mill's.
func TestDuraCloudSpaceIDs(t *testing.T) {
	for _, id := range []string{"abc", "photos", "docs-2020", "a.b.c", "x-duracloud-admin", "a1.b2c", strings.Repeat("a", 42)} {
		if err := ValidateDuraCloudSpaceID(id); err != nil {
			t.Errorf("ValidateDuraCloudSpaceID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "ab", strings.Repeat("a", 43), "Photos", "pho_tos", "pho tos", "9lives", ".dot", "-dash",
		"dash-", "photos.", "a..b", "a-.b", "a.-b", "host.9", "a.b.1c", "1.2.3.4", "a/b", "..", "ph\x00tos", "ünï"} {
		if err := ValidateDuraCloudSpaceID(id); !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("ValidateDuraCloudSpaceID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	s, err := New(s3.New(s3.Options{}), Config{Bucket: "books", Layout: LayoutDuraCloud, AccountPrefix: "AKIAIOSFODNN7EXAMPLE"})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := s.contentKey("photos", "../../x"); err != nil || o.bucket != "akiaiosfodnn7example.photos" || o.key != "../../x" {
		t.Errorf("contentKey(photos, ../../x) = %+v, %v", o, err)
	}
	for _, sp := range []string{"..", "a/b", "Photos", ".mill-trash", "ab"} {
		if _, err := s.contentKey(sp, "x"); !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("contentKey(%q) = %v, want ErrInvalidID", sp, err)
		}
	}
}

// TestDuraCloudConfig: the layout needs a 20-character account prefix and
// a bookkeeping bucket that is not one of its space buckets.
func TestDuraCloudConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Bucket: "b", Layout: LayoutDuraCloud}, "AccountPrefix"},
		{Config{Bucket: "b", Layout: LayoutDuraCloud, AccountPrefix: "AKIAIOSFODNN7EXAMPL"}, "AccountPrefix"},
		{Config{Bucket: "b", Layout: LayoutDuraCloud, AccountPrefix: "AKIAIOSFODNN7EXAMP_E"}, "AccountPrefix"},
		{Config{Bucket: "akiaiosfodnn7example.x", Layout: LayoutDuraCloud, AccountPrefix: "AKIAIOSFODNN7EXAMPLE"}, "Bucket"},
		{Config{Bucket: "b", AccountPrefix: "AKIAIOSFODNN7EXAMPLE"}, "AccountPrefix"},
		{Config{Bucket: "b", Layout: "fedora"}, "Layout"},
	} {
		if _, err := New(s3.New(s3.Options{}), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// TestJavaURLEncoding: values are encoded as java.net.URLEncoder encodes
// them in UTF-8 (the outputs are Java's), and decoded back.
func TestJavaURLEncoding(t *testing.T) {
	for in, java := range map[string]string{
		"Sunset over the bay & café": "Sunset+over+the+bay+%26+caf%C3%A9",
		"alice@example.org":          "alice%40example.org",
		"a.b-c*d_e~f/g+h%i":          "a.b-c*d_e%7Ef%2Fg%2Bh%25i",
		"":                           "",
		"日本":                         "%E6%97%A5%E6%9C%AC",
		"%2A*~":                      "%252A*%7E",
	} {
		if got := javaURLEncode(in); got != java {
			t.Errorf("javaURLEncode(%q) = %q, want %q", in, got, java)
		}
		if back, ok := javaURLDecode(java); !ok || back != in {
			t.Errorf("javaURLDecode(%q) = %q, %v", java, back, ok)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz", "a%g1"} {
		if _, ok := javaURLDecode(bad); ok {
			t.Errorf("javaURLDecode(%q) accepted a malformed escape", bad)
		}
	}
	// A malformed value is kept as written, not dropped.
	if _, props := duraDecode("", map[string]string{"k": "UTF-8''%zz"}); props["k"] != "UTF-8''%zz" {
		t.Errorf("malformed value read as %q", props["k"])
	}
}
