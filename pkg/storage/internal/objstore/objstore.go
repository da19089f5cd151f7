// Package objstore is the portable layer of Mill's object-store providers
// (s3store, gcsstore, azstore), as go-cloud's drivers share theirs: the
// logic is here once, each provider gives it the few service calls it
// needs as function fields or a small interface.
//
//   - Layout: the names of space markers, items, trash copies and staged
//     uploads under a store's prefix, and the name-length limit.
//     s3store's DuraCloud layout uses it for its trash copies and staged
//     uploads only (its items are in a bucket per space).
//   - Spaces: the space markers (JSON ACLs), over a MarkerBackend, and
//     why a read found nothing (ReadErr). s3store uses it for its Mill
//     layout only (DuraCloud spaces are buckets).
//   - Methods: what gcsstore and azstore have alike and embed (the space
//     methods, ListContent, Put, Head, Get, Delete, SetProperties,
//     MaxContentIDLen, Versions, Restore), built from a Provider: its
//     Spaces, Put, Recovery (the service's calls on one object), GetRange
//     and ListNames.
//   - Put: the front of a put (refusals before any byte is read, then
//     one buffered request or a streamed upload); CheckMD5, SizeErr;
//     UploadRules: the defaults and the service's limits of a store
//     Config's storage.Upload, applied and checked in one place.
//   - Metadata and Attrs: an item's metadata (MD5, properties JSON,
//     CRC-64/NVME) within the service's limit, and its Info.
//   - Preserver and the trash names and version IDs (TrashName,
//     TrashVersion, CutTrashID, PickVersion, Spaces.RestoreSource): how a
//     store without service versions keeps what it replaces.
//   - Page, GetCurrent, ClampRange: listing pages and reads.
//   - MapErr, Wrap, Portable, Detached: errors and cleanup. A provider
//     only names the storage error each of its service's errors is.
package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
)

// TrashPrefix is where, under a store's prefix, a provider keeps a copy of
// what it deletes or replaces (when its service keeps no versions).
const TrashPrefix = ".mill-trash/"

const stampLayout = "20060102T150405.000000000Z"

// TrashItemPrefix is the name prefix of one item's trash copies under a
// store's prefix: the space, then the SHA-256 of the content ID (so any ID
// fits the name limits).
func TrashItemPrefix(prefix, space, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + TrashPrefix + space + "/" + hex.EncodeToString(sum[:]) + "/"
}

// TrashName names a trash copy: when it was made, random hex (16 digits of
// random), and why.
func TrashName(now time.Time, random, reason string) string {
	return now.UTC().Format(stampLayout) + "-" + random[:16] + "." + reason
}

// ParseTrashName returns the time and reason of a trash copy's name; ok is
// false for a name TrashName did not make.
func ParseTrashName(name string) (at time.Time, reason string, ok bool) {
	if len(name) < len(stampLayout)+18 || name[len(stampLayout)] != '-' || name[len(stampLayout)+17] != '.' {
		return time.Time{}, "", false
	}
	for _, c := range name[len(stampLayout)+1 : len(stampLayout)+17] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return time.Time{}, "", false
		}
	}
	reason = name[len(stampLayout)+18:]
	switch reason {
	case storage.ReplacedByDelete, storage.ReplacedByOverwrite, storage.ReplacedByProperties:
	default:
		return time.Time{}, "", false
	}
	at, err := time.Parse(stampLayout, name[:len(stampLayout)])
	return at, reason, err == nil
}

// ASCIIJSON marshals v as JSON with every non-ASCII character escaped, so
// that it survives an HTTP header (user metadata) unchanged.
func ASCIIJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r < utf8.RuneSelf:
			sb.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String(), nil
}

// Head reads the start of a put's content, giving way to ctx: up to
// threshold bytes (fewer when the promised size is smaller) and one more.
// When the content ended within the threshold, whole is true and head is
// all of it; otherwise rest streams the whole content (head first).
func Head(ctx context.Context, r io.Reader, size, threshold int64) (head []byte, whole bool, rest io.Reader, err error) {
	r = ctxio.NewReader(ctx, r)
	limit := threshold
	if size >= 0 && size < limit {
		limit = size
	}
	head, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, nil, err
	}
	n := int64(len(head))
	if n <= limit && (size < 0 || n < threshold || n == size) {
		return head, true, nil, nil
	}
	return nil, false, io.MultiReader(bytes.NewReader(head), r), nil
}

// SizeErr reports content whose length is not the promised size (want
// -1: unknown, anything goes). The provider's Wrap names it.
func SizeErr(got, want int64) error {
	if want >= 0 && got != want {
		return fmt.Errorf("read %d bytes, the put promised %d", got, want)
	}
	return nil
}
