package migrate_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/migrate"
	"github.com/millfleet/mill/pkg/storage"
)

const (
	md5a = "0cc175b9c0f1b6a831c399e269772661" // "a"
	md5b = "92eb5ffee6ae2fec3ad71c777531578f" // "b"
)

// single is an item as DuraCloud's layout reports it: its ETag (an MD5)
// is both the recorded MD5 and the provider's digest.
func single(md5 string, size int64) *storage.Info {
	return &storage.Info{Checksum: md5, ProviderChecksum: storage.ProviderMD5(md5), Size: size}
}

func TestPlan(t *testing.T) {
	archived := single(md5a, 1)
	archived.Archived, archived.StorageClass = true, "DEEP_ARCHIVE"
	restored := single(md5a, 1)
	restored.Archived, restored.Restore = true, storage.RestoreRestored
	multipart := &storage.Info{Checksum: "", ProviderChecksum: "", Size: 1}
	replaced := &storage.Info{Checksum: md5a, ProviderChecksum: storage.ProviderMD5(md5b), Size: 1}
	millMultipart := &storage.Info{Checksum: md5a, ProviderChecksum: "crc64nvme:AAAAAAAAAAA=", Size: 1}
	for _, tc := range []struct {
		name     string
		src, dst *storage.Info
		want     migrate.Outcome
		detail   string
	}{
		{"new item", single(md5a, 1), nil, migrate.Copied, ""},
		{"upper-case ETag", single(strings.ToUpper(md5a), 1), nil, migrate.Copied, ""},
		{"restored archived item", restored, nil, migrate.Copied, ""},
		{"already there (S3's digest)", single(md5a, 1), single(md5a, 1), migrate.Skipped, "provider's digest"},
		{"already there (multipart, recorded MD5)", single(md5a, 1), millMultipart, migrate.Skipped, "recorded with the copy"},
		{"other content there", single(md5a, 1), single(md5b, 1), migrate.Differs, "not overwritten"},
		{"same MD5, other size", single(md5a, 1), single(md5a, 2), migrate.Differs, "2 bytes"},
		{"destination replaced behind its record", single(md5a, 1), replaced, migrate.Differs, "contradicted"},
		{"no MD5 at the source", multipart, nil, migrate.Refused, "no MD5"},
		{"archived at the source", archived, nil, migrate.Refused, "DEEP_ARCHIVE"},
		{"source record contradicted", replaced, nil, migrate.Corrupt, "recorded MD5 " + md5a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := migrate.Plan(tc.src, tc.dst)
			if a.Outcome != tc.want || !strings.Contains(a.Detail, tc.detail) {
				t.Errorf("Plan = %s (%s), want %s with %q", a.Outcome, a.Detail, tc.want, tc.detail)
			}
			if tc.want != migrate.Refused || tc.name == "archived at the source" {
				if a.MD5 != md5a {
					t.Errorf("MD5 %q, want DuraCloud's %s", a.MD5, md5a)
				}
			}
		})
	}
}

func sums(b string) *storage.Sums {
	s := storage.NewSums()
	s.Write([]byte(b))
	return s
}

func TestVerify(t *testing.T) {
	dst := single(md5a, 1)
	for _, tc := range []struct {
		name       string
		want       string
		size       int64
		read, back *storage.Sums
		dst        *storage.Info
		outcome    migrate.Outcome
		detail     string
	}{
		{"verified", md5a, 1, sums("a"), sums("a"), dst, migrate.Copied, ""},
		{"source bytes not DuraCloud's", md5a, 1, sums("b"), sums("b"), single(md5b, 1), migrate.Corrupt, "DuraCloud recorded MD5 " + md5a},
		{"source shorter", md5a, 2, sums("a"), sums("a"), dst, migrate.Corrupt, "1 bytes"},
		{"destination bytes differ", md5a, 1, sums("a"), sums("b"), dst, migrate.Failed, "read back"},
		{"destination truncated", md5a, 1, sums("a"), sums(""), dst, migrate.Failed, "0 bytes"},
		{"destination's digest contradicts its bytes", md5a, 1, sums("a"), sums("a"), single(md5b, 1), migrate.Failed, "contradict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, d := migrate.Verify(tc.want, tc.size, tc.read, tc.dst, tc.back)
			if o != tc.outcome || !strings.Contains(d, tc.detail) {
				t.Errorf("Verify = %s (%s), want %s with %q", o, d, tc.outcome, tc.detail)
			}
		})
	}
}
