package storage

import "strings"

// Which checksum a copy of an item has: the one rule every processor uses
// (the bit check, the audit processor, duplication, the repair).
//
// A copy's MD5 can come from three sources; the strongest one available
// wins:
//
//  1. the bytes as read and hashed (content);
//  2. the provider's own digest of the bytes it holds (provider): an S3
//     single-part ETag, recomputed by S3 on every write whoever makes it;
//     a full-object CRC-64/NVME is no MD5 and only confirms or contradicts
//     the bytes read;
//  3. Mill's own claim (claim): the MD5 Mill recorded with the copy when it
//     wrote it — S3 metadata "mill-md5", an fs sidecar — which anyone who
//     rewrites the object can keep or forge.
//
// A claim that a stronger source contradicts is evidence that the copy was
// replaced (or went sour) after Mill wrote it, never a reason to trust it:
// such a copy is not in sync with anything and is never copied from. A
// provider digest that the bytes read contradict means the provider holds
// other bytes than it vouches for.

// ChecksumSource names where a copy's MD5 came from.
type ChecksumSource string

// Checksum sources, strongest first.
const (
	SourceContent  ChecksumSource = "content"  // the bytes as read and hashed
	SourceProvider ChecksumSource = "provider" // the provider's own MD5 digest
	SourceClaim    ChecksumSource = "claim"    // Mill's recorded MD5, unverified
	SourceNone     ChecksumSource = ""         // no source gives an MD5
)

// sourceText is each source in a report's words (Describe).
var sourceText = map[ChecksumSource]string{
	SourceContent:  "the bytes read",
	SourceProvider: "the provider's digest",
	SourceClaim:    "the MD5 recorded with the copy",
	SourceNone:     "no source",
}

// Describe says in a report's words where an MD5 came from ("the
// provider's digest"); a value that is no source is written as it is.
func (s ChecksumSource) Describe() string {
	if t, ok := sourceText[s]; ok {
		return t
	}
	return string(s)
}

// CopyChecksum is which checksum one copy of an item has (ChecksumOf).
type CopyChecksum struct {
	// MD5 is the copy's MD5 (lower-case hex) from the strongest source;
	// "" when no source gives one. (A recorded MD5 that is not one — a
	// forged metadata value — is taken as it is when nothing stronger
	// exists, so it matches nothing.)
	MD5    string
	Source ChecksumSource
	// Claim is the MD5 Mill recorded with the copy (Info.Checksum, lower
	// case); "" when none.
	Claim string
	// Provider is the provider's own checksum as it reports it
	// (Info.ProviderChecksum).
	Provider string
	// ClaimContradicted: a stronger source gives another MD5 than the
	// claim: the copy is not the one Mill wrote.
	ClaimContradicted bool
	// ProviderContradicted: the bytes read do not match the provider's own
	// digest (its MD5 or its CRC-64/NVME).
	ProviderContradicted bool
	// ProviderVerified: the bytes were read and match the provider's own
	// digest.
	ProviderVerified bool
}

// ChecksumOf applies the rule to one copy: info as the provider reports it
// (Head or Get) and, when its bytes were read, their sums (nil when not
// read).
func ChecksumOf(info *Info, content *Sums) CopyChecksum {
	c := CopyChecksum{Claim: strings.ToLower(strings.TrimSpace(info.Checksum)), Provider: info.ProviderChecksum}
	alg, val, _ := SplitProviderChecksum(info.ProviderChecksum)
	providerMD5 := ""
	if alg == AlgMD5 && ValidMD5(strings.ToLower(val)) {
		providerMD5 = strings.ToLower(val)
	}
	switch {
	case content != nil:
		c.MD5, c.Source = content.MD5(), SourceContent
		switch {
		case providerMD5 != "":
			c.ProviderContradicted = providerMD5 != c.MD5
		case alg == AlgCRC64NVME:
			c.ProviderContradicted = val != CRC64NVMEBase64(content.CRC64NVME())
		}
		c.ProviderVerified = (providerMD5 != "" || alg == AlgCRC64NVME) && !c.ProviderContradicted
	case providerMD5 != "":
		c.MD5, c.Source = providerMD5, SourceProvider
	case c.Claim != "":
		// Taken as recorded even when it is no MD5: it then matches no
		// bytes, which is safer than knowing no checksum at all.
		c.MD5, c.Source = c.Claim, SourceClaim
	}
	c.ClaimContradicted = c.Claim != "" && c.Claim != c.MD5
	return c
}

// Trusted reports whether the copy's MD5 is known and no source
// contradicts another.
func (c CopyChecksum) Trusted() bool {
	return c.MD5 != "" && !c.ClaimContradicted && !c.ProviderContradicted
}

// Holds reports whether the copy holds the content whose MD5 is md5 as far
// as its sources tell: its MD5 is md5 and nothing contradicts it.
func (c CopyChecksum) Holds(md5 string) bool {
	return c.Trusted() && strings.EqualFold(c.MD5, md5)
}

// String describes the copy's checksum and any contradiction, for errors
// and bit log details.
func (c CopyChecksum) String() string {
	var b strings.Builder
	if c.MD5 == "" {
		b.WriteString("MD5 unknown")
	} else {
		b.WriteString("MD5 " + c.MD5 + " (" + string(c.Source) + ")")
	}
	if c.ClaimContradicted {
		b.WriteString("; the recorded MD5 " + QuoteID(c.Claim) + " contradicts it")
	}
	if c.ProviderContradicted {
		b.WriteString("; the provider's checksum " + QuoteID(c.Provider) + " contradicts the bytes")
	}
	return b.String()
}
