package s3store

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/millfleet/mill/internal/base/permanent"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
)

// Layouts (Config.Layout).
const (
	LayoutMill      = ""
	LayoutDuraCloud = "duracloud"
)

// DuraCloud's layout, as its S3StorageProvider writes it (see the package
// doc, DuraCloud layout).
const (
	// AccountPrefixLen is the length of the account prefix of DuraCloud's
	// space buckets (an AWS access key ID).
	AccountPrefixLen = 20
	// DuraCloudMaxSpaceIDLen is DuraCloud's longest space ID.
	DuraCloudMaxSpaceIDLen = 42
	// DuraCloudMaxItem is the largest item of the layout: DuraCloud writes
	// each item with one PutObject (S3's limit), so its ETag is its MD5.
	DuraCloudMaxItem = 5 << 30

	duraValuePrefix = "UTF-8''" // RFC 5987 value, URL-encoded as Java's URLEncoder
	duraKeySuffix   = "*"
	tagSpaceCreated = "space-created"
	duraACL         = "acl-"
	duraACLGroup    = "acl-group-"
	duraACLDelim    = ":"
	duraDateLayout  = "2006-01-02T15:04:05"
	claimPrefix     = ".mill-spaces/"
	// duraContentEncoding is the property DuraCloud keeps as the object's
	// Content-Encoding rather than as metadata.
	duraContentEncoding = "Content-Encoding"
)

// duraACLTags are the bucket tags DuraCloud packs a space's ACLs into, in
// the order it unpacks them (a later one wins): users then groups, READ
// then WRITE.
var duraACLTags = []struct{ tag, prefix, right string }{
	{"acl-user-read", duraACL, "READ"},
	{"acl-user-write", duraACL, "WRITE"},
	{"acl-group-read", duraACLGroup, "READ"},
	{"acl-group-write", duraACLGroup, "WRITE"},
}

// duraShadowed are the property names DuraCloud computes when it reads an
// item (and drops when it writes one): a user property of that name would
// never be seen, so the layout refuses it and never reports one.
var duraShadowed = map[string]bool{
	"content-mimetype": true, "content-size": true, "content-checksum": true,
	"content-md5": true, "content-modified": true, "content-type": true,
	"content-length": true, "last-modified": true, "date": true, "etag": true,
}

// ErrTooLarge: an item larger than its layout can hold (DuraCloudMaxItem).
var ErrTooLarge = permanent.New("s3store: item too large for the layout")

func (s *Store) dura() bool { return s.cfg.Layout == LayoutDuraCloud }

// duraBucket names a space's bucket: the account prefix, a dot, the space
// ID (for a valid space ID DuraCloud's bucket-name rewriting changes
// nothing).
func (s *Store) duraBucket(space string) string { return s.cfg.AccountPrefix + "." + space }

func (c Config) validateLayout(p *validate.Problems) {
	switch c.Layout {
	case LayoutMill:
		p.Check(c.AccountPrefix == "", "AccountPrefix", c.AccountPrefix, "be empty unless Layout is %q", LayoutDuraCloud)
	case LayoutDuraCloud:
		p.Check(ValidAccountPrefix(c.AccountPrefix), "AccountPrefix", c.AccountPrefix, "be %d ASCII letters and digits (the access key ID DuraCloud names its buckets with)", AccountPrefixLen)
		p.Check(!strings.HasPrefix(strings.ToLower(c.Bucket), strings.ToLower(c.AccountPrefix)+"."), "Bucket", c.Bucket,
			"not be named like a space bucket (%s.<space>): it holds the store's trash and temporary uploads", strings.ToLower(c.AccountPrefix))
	default:
		p.Check(false, "Layout", c.Layout, "be %q (Mill's) or %q", LayoutMill, LayoutDuraCloud)
	}
}

// ValidAccountPrefix reports whether s can be a DuraCloud account prefix:
// AccountPrefixLen ASCII letters and digits.
func ValidAccountPrefix(s string) bool {
	if len(s) != AccountPrefixLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// validSpace checks a space ID: Mill's rules, and DuraCloud's too in its
// layout.
func (s *Store) validSpace(space string) error {
	if err := storage.ValidateSpaceID(space); err != nil {
		return err
	}
	if s.dura() {
		return ValidateDuraCloudSpaceID(space)
	}
	return nil
}

// ValidateDuraCloudSpaceID applies DuraCloud's space ID rules: 3 to 42
// characters of lower-case letters, digits, '.' and '-'; starting with a
// letter; not ending with '-'; no "..", "-." or ".-"; the last '.' not
// followed by a digit. It also refuses an ID ending with '.', which
// DuraCloud allows but would store in another space's bucket (it drops
// the dot S3 refuses). The error wraps storage.ErrInvalidID.
func ValidateDuraCloudSpaceID(id string) error {
	bad := func(rule string) error {
		return fmt.Errorf("%w: space ID %s: DuraCloud's rule: %s", storage.ErrInvalidID, storage.QuoteID(id), rule)
	}
	if len(id) < 3 || len(id) > DuraCloudMaxSpaceIDLen {
		return bad(fmt.Sprintf("3 to %d characters", DuraCloudMaxSpaceIDLen))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return bad("only lower-case letters, digits, '.' and '-'")
		}
	}
	switch {
	case id[0] < 'a' || id[0] > 'z':
		return bad("it begins with a lower-case letter")
	case strings.HasSuffix(id, "-"):
		return bad("it ends with a letter, a digit or '.'")
	case strings.HasSuffix(id, "."):
		// DuraCloud allows it, but S3 does not end a bucket name with '.':
		// DuraCloud would drop the dot, into the bucket of another space.
		return fmt.Errorf("%w: space ID %s ends with '.': its bucket would be the bucket of the space without the dot", storage.ErrInvalidID, storage.QuoteID(id))
	case strings.Contains(id, "..") || strings.Contains(id, "-.") || strings.Contains(id, ".-"):
		return bad(`no "..", "-." or ".-"`)
	}
	if i := strings.LastIndexByte(id, '.'); i >= 0 && i+1 < len(id) && '0' <= id[i+1] && id[i+1] <= '9' {
		return bad("the last '.' is not followed by a digit")
	}
	return nil
}

// duraFits refuses an item larger than the DuraCloud layout holds.
func (s *Store) duraFits(size int64) error {
	if s.dura() && size > DuraCloudMaxItem {
		return fmt.Errorf("%w: %d bytes: DuraCloud's layout keeps an item as one S3 object of at most %d bytes (DuraCloud's clients chunk larger files)", ErrTooLarge, size, int64(DuraCloudMaxItem))
	}
	return nil
}

// encodeMeta is an item's user metadata in the store's layout.
func (s *Store) encodeMeta(md5hex string, props map[string]string) (map[string]string, error) {
	if s.dura() {
		return duraMetadata(props)
	}
	return metadata(md5hex, props)
}

// duraMetadata encodes properties as DuraCloud writes them: the name
// with spaces as "%20", the value as duraValuePrefix (RFC 5987) + its URL
// encoding. (DuraCloud's addContent also appends '*' to the name, which its reader drops and its
// setContentProperties does not write: Mill leaves it out, as some
// S3-compatible services drop names with '*'.) The MD5 is the ETag, so it
// is not written.
func duraMetadata(props map[string]string) (map[string]string, error) {
	m := make(map[string]string, len(props))
	size := 0
	for k, v := range props {
		if k == duraContentEncoding {
			m[k] = v // the object's Content-Encoding (splitEncoding)
			continue
		}
		if err := duraPropertyName(k); err != nil {
			return nil, err
		}
		mk := strings.ReplaceAll(k, " ", "%20")
		mv := duraValuePrefix + javaURLEncode(v)
		m[mk] = mv
		size += len(mk) + len(mv)
	}
	if size > MaxMetadataSize {
		return nil, fmt.Errorf("%w: the properties need %d bytes of S3 user metadata (limit %d)", storage.ErrPropertiesTooLarge, size, MaxMetadataSize)
	}
	return m, nil
}

// duraPropertyName refuses a name S3 would not keep as given in a header
// name (upper case, non-ASCII, separators), a '%' (it would not decode as
// written) and the names DuraCloud computes itself.
func duraPropertyName(k string) error {
	bad := func(rule string) error {
		return fmt.Errorf("%w: property name %s: %s", storage.ErrInvalidProperty, storage.QuoteID(k), rule)
	}
	if k == "" || strings.HasSuffix(k, duraKeySuffix) {
		return bad("empty, or ending with '*' (DuraCloud drops it when it reads the name)")
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == ' ', strings.IndexByte("!#$&'*+-.^_`|~", c) >= 0:
		case 'A' <= c && c <= 'Z':
			return bad("DuraCloud's layout keeps names as S3 metadata keys, which S3 lower-cases: use lower case")
		default:
			return bad("DuraCloud's layout keeps names as S3 metadata keys: only ASCII letters, digits, spaces and !#$&'*+-.^_`|~")
		}
	}
	if duraShadowed[k] {
		return bad("DuraCloud computes this property itself")
	}
	return nil
}

// duraDecode reads an item's checksum and properties as DuraCloud's
// getContentProperties does: the MD5 is the single-part ETag; each user
// metadata entry is a property (a trailing "*" dropped, "%20" a space, a
// value with duraValuePrefix URL-decoded).
func duraDecode(providerChecksum string, meta map[string]string) (string, map[string]string) {
	var md5hex string
	if alg, v, ok := storage.SplitProviderChecksum(providerChecksum); ok && alg == storage.AlgMD5 {
		md5hex = v
	}
	props := make(map[string]string, len(meta))
	for k, v := range meta {
		name := strings.ReplaceAll(strings.TrimSuffix(k, duraKeySuffix), "%20", " ")
		if duraShadowed[strings.ToLower(name)] {
			continue
		}
		if rest, ok := strings.CutPrefix(v, duraValuePrefix); ok {
			if dec, ok := javaURLDecode(rest); ok {
				v = dec
			}
		}
		props[name] = v
	}
	return md5hex, props
}

// javaURLEncode encodes s as java.net.URLEncoder does in UTF-8: letters,
// digits and ".-*_" as they are, ' ' as '+', every other byte as %XX (Go's
// query escaping, but for '~' and '*').
func javaURLEncode(s string) string { return javaEscapes.Replace(url.QueryEscape(s)) }

var javaEscapes = strings.NewReplacer("~", "%7E", "%2A", "*")

// javaURLDecode undoes javaURLEncode ('+' is a space), as
// java.net.URLDecoder does; ok is false for a malformed escape.
func javaURLDecode(s string) (string, bool) {
	v, err := url.QueryUnescape(s)
	return v, err == nil
}

// splitEncoding takes the Content-Encoding out of metadata encodeMeta
// built (only DuraCloud's layout puts one there: a metadata name is never
// upper case), for the request's own header.
func splitEncoding(meta map[string]string) (map[string]string, *string) {
	v, ok := meta[duraContentEncoding]
	if !ok {
		return meta, nil
	}
	rest := make(map[string]string, len(meta)-1)
	for k, x := range meta {
		if k != duraContentEncoding {
			rest[k] = x
		}
	}
	return rest, &v
}
