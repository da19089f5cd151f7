package storage_test

import (
	"crypto/md5"
	"encoding/hex"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func md5Of(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func sumsOf(s string) *storage.Sums {
	x := storage.NewSums()
	x.Write([]byte(s))
	return x
}

// TestChecksumOf holds the rule to every combination of its sources: the
// bytes read beat the provider's digest, which beats Mill's claim, and a
// claim a stronger source contradicts is reported, never taken.
func TestChecksumOf(t *testing.T) {
	old, cur := md5Of("old bytes"), md5Of("new bytes")
	crcOf := func(s string) string { return storage.ProviderCRC64NVME(sumsOf(s).CRC64NVME()) }
	type want struct {
		md5                   string
		source                storage.ChecksumSource
		claimBad, providerBad bool
		providerOK, trusted   bool
	}
	tests := []struct {
		name     string
		claim    string
		provider string
		read     string // the bytes read; "" not read
		want     want
	}{
		// Nothing read: the provider's MD5 beats the claim.
		{"all agree, not read", old, storage.ProviderMD5(old), "", want{md5: old, source: storage.SourceProvider, trusted: true}},
		{"replaced: ETag new, claim kept", old, storage.ProviderMD5(cur), "", want{md5: cur, source: storage.SourceProvider, claimBad: true}},
		{"upper-case ETag", old, "md5:" + toUpper(old), "", want{md5: old, source: storage.SourceProvider, trusted: true}},
		{"no claim, ETag", "", storage.ProviderMD5(cur), "", want{md5: cur, source: storage.SourceProvider, trusted: true}},
		{"claim, CRC only", old, crcOf("old bytes"), "", want{md5: old, source: storage.SourceClaim, trusted: true}},
		{"claim, no provider checksum", old, "", "", want{md5: old, source: storage.SourceClaim, trusted: true}},
		{"no claim, CRC only", "", crcOf("x"), "", want{}},
		{"nothing at all", "", "", "", want{}},
		{"claim not an MD5", "ZZ", "", "", want{md5: "zz", source: storage.SourceClaim, trusted: true}},
		{"claim not an MD5, ETag", "zz", storage.ProviderMD5(old), "", want{md5: old, source: storage.SourceProvider, claimBad: true}},
		{"upper-case claim", "  " + toUpper(old) + " ", storage.ProviderMD5(old), "", want{md5: old, source: storage.SourceProvider, trusted: true}},
		// Read: the bytes beat everything.
		{"read, all agree", old, storage.ProviderMD5(old), "old bytes", want{md5: old, source: storage.SourceContent, providerOK: true, trusted: true}},
		{"read, replaced: ETag and bytes new, claim kept", old, storage.ProviderMD5(cur), "new bytes",
			want{md5: cur, source: storage.SourceContent, claimBad: true, providerOK: true}},
		{"read, sour: ETag and claim old, bytes new", old, storage.ProviderMD5(old), "new bytes",
			want{md5: cur, source: storage.SourceContent, claimBad: true, providerBad: true}},
		{"read, provider wrong: claim and bytes agree", cur, storage.ProviderMD5(old), "new bytes",
			want{md5: cur, source: storage.SourceContent, providerBad: true}},
		{"read, all three differ", md5Of("third"), storage.ProviderMD5(old), "new bytes",
			want{md5: cur, source: storage.SourceContent, claimBad: true, providerBad: true}},
		{"read, CRC verified, claim agrees", cur, crcOf("new bytes"), "new bytes", want{md5: cur, source: storage.SourceContent, providerOK: true, trusted: true}},
		{"read, CRC verified, claim kept from the old bytes", old, crcOf("new bytes"), "new bytes",
			want{md5: cur, source: storage.SourceContent, claimBad: true, providerOK: true}},
		{"read, CRC contradicts the bytes", cur, crcOf("old bytes"), "new bytes", want{md5: cur, source: storage.SourceContent, providerBad: true}},
		{"read, no provider checksum, claim kept", old, "", "new bytes", want{md5: cur, source: storage.SourceContent, claimBad: true}},
		{"read, no claim, no provider", "", "", "new bytes", want{md5: cur, source: storage.SourceContent, trusted: true}},
		{"read, unknown provider algorithm", cur, "sha1:abc", "new bytes", want{md5: cur, source: storage.SourceContent, trusted: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var content *storage.Sums
			if tc.read != "" {
				content = sumsOf(tc.read)
			}
			c := storage.ChecksumOf(&storage.Info{Checksum: tc.claim, ProviderChecksum: tc.provider}, content)
			got := want{md5: c.MD5, source: c.Source, claimBad: c.ClaimContradicted, providerBad: c.ProviderContradicted,
				providerOK: c.ProviderVerified, trusted: c.Trusted()}
			if got != tc.want {
				t.Errorf("ChecksumOf = %+v, want %+v (%s)", got, tc.want, c)
			}
			if c.Holds(c.MD5) != (c.MD5 != "" && tc.want.trusted) {
				t.Errorf("Holds(%q) = %t with %+v", c.MD5, c.Holds(c.MD5), got)
			}
			if c.Provider != tc.provider {
				t.Errorf("Provider = %q, want %q", c.Provider, tc.provider)
			}
		})
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestChecksumOfNeverTakesAContradictedClaim: whatever the claim says, a
// copy is held to be the claimed content only when no stronger source
// disagrees.
func TestChecksumOfNeverTakesAContradictedClaim(t *testing.T) {
	old, cur := md5Of("old bytes"), md5Of("new bytes")
	for _, info := range []storage.Info{
		{Checksum: old, ProviderChecksum: storage.ProviderMD5(cur)},
		{Checksum: old, ProviderChecksum: storage.ProviderMD5(cur), Size: 9},
	} {
		c := storage.ChecksumOf(&info, nil)
		if c.Holds(old) || c.Holds(cur) {
			t.Errorf("%+v: Holds(old)=%t Holds(new)=%t; a copy whose claim is contradicted holds nothing", info, c.Holds(old), c.Holds(cur))
		}
		if c.MD5 != cur {
			t.Errorf("%+v: MD5 %s, want the provider's %s", info, c.MD5, cur)
		}
	}
}

// Every checksum source has its own words in a report (migrate's Skipped
// detail says which one vouched for the destination's MD5).
func TestChecksumSourceDescribe(t *testing.T) {
	seen := map[string]storage.ChecksumSource{}
	for _, s := range []storage.ChecksumSource{storage.SourceContent, storage.SourceProvider, storage.SourceClaim, storage.SourceNone} {
		d := s.Describe()
		if d == "" || d == string(s) {
			t.Errorf("%q has no words of its own: %q", s, d)
		}
		if o, dup := seen[d]; dup {
			t.Errorf("%q and %q both read %q", o, s, d)
		}
		seen[d] = s
	}
	if got := storage.ChecksumSource("etag").Describe(); got != "etag" {
		t.Errorf("an unknown source reads %q", got)
	}
}
