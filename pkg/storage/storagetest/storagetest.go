package storagetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other fields
// are capability flags that adapt the suite to what a provider can do.
type Harness struct {
	// New returns a fresh, empty store (no spaces) for one subtest; it
	// registers its own cleanup with t.
	New func(t *testing.T) Fixture
	// LargeSize, when > 0, is a content size that takes the provider's
	// large-object path (S3 multipart); the suite then round-trips,
	// checksum-checks and cancels items of that size.
	LargeSize int64
	// MaxPropertiesSize, when > 0, is the provider's limit on the encoded
	// size of an item's properties; the suite checks that a larger set is
	// refused with storage.ErrPropertiesTooLarge.
	MaxPropertiesSize int
	// InvalidContentIDs are IDs this provider refuses with ErrInvalidID
	// beyond the portable rules (for example "../x" on a filesystem).
	InvalidContentIDs []string
	// UnverifiedChecksums lists provider-checksum algorithms whose values
	// the suite checks for presence only, not against the data: for an
	// emulator known to compute them wrongly (moto without awscrt reports
	// a CRC32 as CRC64NVME). Empty against a real service.
	UnverifiedChecksums []string
	// HeaderPropertyKeys says the provider keeps property names as HTTP
	// header names (DuraCloud's S3 layout: S3 lower-cases them, and they
	// are ASCII). The suite then uses lower-case ASCII names (headerSafe)
	// and checks that other names are refused with
	// storage.ErrInvalidProperty, changing nothing.
	HeaderPropertyKeys bool
	// PlainPropertyNames (with HeaderPropertyKeys) makes the suite's
	// property names only letters, digits, '-', '_' and '.': for an
	// emulator that drops other metadata names (moto drops "a%20b", which
	// DuraCloud writes for a name with a space). Unset against a real
	// service.
	PlainPropertyNames bool
	// ACLs, when set, is the space ACL set the suite writes and reads
	// back, in the names and rights the provider keeps (nil: user, group
	// and unicode names with READ and WRITE); InvalidACLs are sets it must
	// refuse with storage.ErrInvalidProperty, changing nothing.
	ACLs        map[string]string
	InvalidACLs []map[string]string
	// CopyConditionsIgnored says the endpoint ignores a server-side
	// copy's preconditions (moto ignores x-amz-copy-source-if-match and
	// If-None-Match on CopyObject): the suite then holds the provider's
	// Put to its preconditions but not its server-side copy. Unset
	// against a real service.
	CopyConditionsIgnored bool
}

// Fixture is one fresh store made for one subtest, with the hooks that
// reach behind that store.
type Fixture struct {
	// Provider is a new, empty store (no spaces).
	Provider storage.Provider
	// MaxContentIDLen, when set, returns the longest content ID the
	// provider accepts in space (S3 counts the store prefix and the space
	// against its 1024-byte key limit); nil means storage.MaxContentIDLen.
	MaxContentIDLen func(space string) int
	// Corrupt, when set, changes the stored bytes of an existing item
	// behind the provider's back, keeping its recorded MD5 (content gone
	// sour).
	Corrupt func(t *testing.T, space, contentID string)
	// Replace, when set, replaces the stored bytes of an existing item
	// with data behind the provider's back, as another tool writing the
	// store would, keeping the MD5 the provider recorded (an S3 PutObject
	// copying the object's metadata; a new fs blob file renamed over the
	// old). The suite then holds the provider to the one checksum rule
	// (storage.ChecksumOf): its own checksum must tell the new bytes, so
	// the kept MD5 is contradicted — by Head as well as by a read.
	Replace func(t *testing.T, space, contentID string, data []byte)
}

// subject is what one subtest runs on: its Fixture and the capabilities.
type subject struct {
	Fixture
	Harness
}

// props returns m with names the provider keeps as given: with
// HeaderPropertyKeys, lower-case ASCII (a non-ASCII rune as its hex code).
func (h *subject) props(m map[string]string) map[string]string {
	if !h.HeaderPropertyKeys || m == nil {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		k = headerSafe(k)
		if h.PlainPropertyNames {
			k = strings.Map(func(r rune) rune {
				if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || r == '.' {
					return r
				}
				return '-'
			}, k)
		}
		out[k] = v
	}
	return out
}

func headerSafe(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "u%04x", r)
		}
	}
	return b.String()
}

// acls is the ACL set the suite writes (Harness.ACLs or the default).
func (h *subject) acls() map[string]string {
	if h.ACLs != nil {
		return maps.Clone(h.ACLs)
	}
	return map[string]string{"user-alice": "WRITE", "group-curators": "READ", "Ünïcode user": "READ"}
}

func (h *subject) maxIDLen(space string) int {
	if h.MaxContentIDLen == nil {
		return storage.MaxContentIDLen
	}
	return h.MaxContentIDLen(space)
}

// Run runs the whole suite, each subtest on a fresh harness.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storagetest: Harness.New is nil")
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *subject)
	}{
		{"Spaces", testSpaces},
		{"CreateSpaceOnce", testCreateSpaceOnce},
		{"SpaceACLs", testSpaceACLs},
		{"InvalidIDs", testInvalidIDs},
		{"NotFound", testNotFound},
		{"OddIDs", testOddIDs},
		{"ListingOrder", testListingOrder},
		{"ListingChanges", testListingChanges},
		{"Entries", testEntries},
		{"InfoFields", testInfoFields},
		{"Overwrite", testOverwrite},
		{"Reopen", testReopen},
		{"Properties", testProperties},
		{"ChecksumMismatch", testChecksumMismatch},
		{"FailedPut", testFailedPut},
		{"ShortPut", testShortPut},
		{"CancelledPut", testCancelledPut},
		{"Large", testLarge},
		{"Copy", testCopy},
		{"Corrupt", testCorrupt},
		{"Replaced", testReplaced},
		{"Concurrent", testConcurrent},
		{"Recoverable", testRecoverable},
		{"RecoverableCopy", testRecoverableCopy},
		{"Seen", testSeen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, &subject{Fixture: h.New(t), Harness: h})
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func mustCreate(t *testing.T, p storage.Provider, space string) {
	t.Helper()
	if err := p.CreateSpace(ctxT(t), space); err != nil {
		t.Fatalf("CreateSpace(%q): %v", space, err)
	}
}

func mustPut(t *testing.T, p storage.Provider, space, id string, data []byte, opts storage.PutOptions) *storage.Info {
	t.Helper()
	if opts.Size == 0 && len(data) > 0 {
		opts.Size = int64(len(data))
	}
	info, err := p.Put(ctxT(t), space, id, bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("Put(%q, %q): %v", space, shortID(id), err)
	}
	return info
}

func mustGet(t *testing.T, p storage.Provider, space, id string) ([]byte, *storage.Info) {
	t.Helper()
	rc, info, err := p.Get(ctxT(t), space, id)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", space, shortID(id), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q, %q): read: %v", space, shortID(id), err)
	}
	return b, info
}

func shortID(id string) string {
	if len(id) > 60 {
		return id[:40] + fmt.Sprintf("…(%d bytes)", len(id))
	}
	return id
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

func wantNotFound(t *testing.T, p storage.Provider, space, id string) {
	t.Helper()
	if _, err := p.Head(ctxT(t), space, id); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Head(%q, %q) after a put that must commit nothing: %v, want ErrNotFound", space, shortID(id), err)
	}
	ids, _, err := p.ListContent(ctxT(t), space, "", 1000)
	if err != nil {
		t.Fatalf("ListContent(%q): %v", space, err)
	}
	if slices.Contains(ids, id) {
		t.Errorf("ListContent(%q) lists %q, which must not exist", space, shortID(id))
	}
}

func wantContent(t *testing.T, p storage.Provider, space, id string, data []byte) {
	t.Helper()
	got, info := mustGet(t, p, space, id)
	if !bytes.Equal(got, data) {
		t.Errorf("Get(%q, %q): %d bytes (md5 %s), want %d bytes (md5 %s)", space, shortID(id), len(got), md5hex(got), len(data), md5hex(data))
	}
	if info.Checksum != md5hex(data) {
		t.Errorf("Get(%q, %q): Info.Checksum %s, want %s", space, shortID(id), info.Checksum, md5hex(data))
	}
}

func testSpaces(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	got, err := p.ListSpaces(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("ListSpaces of a new store: %q, %v; want none", got, err)
	}
	for _, s := range []string{"space-b", "space-a", "space-c", "x-space"} {
		mustCreate(t, p, s)
	}
	mustCreate(t, p, "space-a") // idempotent
	got, err = p.ListSpaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"space-a", "space-b", "space-c", "x-space"}; !slices.Equal(got, want) {
		t.Errorf("ListSpaces: %q, want %q", got, want)
	}
	mustPut(t, p, "space-b", "item", []byte("x"), storage.PutOptions{})
	wantErr(t, "DeleteSpace(non-empty)", p.DeleteSpace(ctx, "space-b"), storage.ErrSpaceNotEmpty)
	if _, err := p.Head(ctx, "space-b", "item"); err != nil {
		t.Errorf("refused DeleteSpace removed content: %v", err)
	}
	if err := p.Delete(ctx, "space-b", "item"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := p.DeleteSpace(ctx, "space-b"); err != nil {
			t.Errorf("DeleteSpace(emptied space): %v", err)
		}
	}
	if err := p.DeleteSpace(ctx, "never-was"); err != nil {
		t.Errorf("DeleteSpace(missing): %v, want nil", err)
	}
	got, _ = p.ListSpaces(ctx)
	if want := []string{"space-a", "space-c", "x-space"}; !slices.Equal(got, want) {
		t.Errorf("ListSpaces after delete: %q, want %q", got, want)
	}
	if _, _, err := p.ListContent(ctx, "space-b", "", 10); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("ListContent(deleted space): %v, want ErrNotFound", err)
	}
	mustCreate(t, p, "space-b") // re-create after delete
	ids, more, err := p.ListContent(ctx, "space-b", "", 10)
	if err != nil || len(ids) != 0 || more {
		t.Errorf("ListContent(re-created space): %q, %v, %v; want empty", ids, more, err)
	}
}

// testCreateSpaceOnce: however many callers create one space at the same
// time, exactly one is told it created it (so a CREATE_SPACE is audited
// once), and a space that exists keeps its ACLs.
func testCreateSpaceOnce(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	sc, ok := p.(storage.SpaceCreator)
	if !ok {
		t.Fatalf("%T does not implement storage.SpaceCreator: a space's creation could be audited more than once", p)
	}
	const callers = 8
	var created atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			ok, err := sc.CreateSpaceIfAbsent(ctx, "once")
			if err != nil {
				t.Errorf("CreateSpaceIfAbsent: %v", err)
			}
			if ok {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if n := created.Load(); n != 1 {
		t.Errorf("%d of %d concurrent CreateSpaceIfAbsent calls say they created the space, want 1", n, callers)
	}
	acls := h.acls()
	if err := p.SetSpaceACLs(ctx, "once", acls); err != nil {
		t.Fatal(err)
	}
	if ok, err := sc.CreateSpaceIfAbsent(ctx, "once"); ok || err != nil {
		t.Errorf("CreateSpaceIfAbsent(existing space) = %v, %v; want false, nil", ok, err)
	}
	if got, err := p.SpaceACLs(ctx, "once"); err != nil || !maps.Equal(got, acls) {
		t.Errorf("SpaceACLs after CreateSpaceIfAbsent of an existing space: %v, %v; want %v", got, err, acls)
	}
	_, err := sc.CreateSpaceIfAbsent(ctx, "a/b")
	wantErr(t, "CreateSpaceIfAbsent(a/b)", err, storage.ErrInvalidID)
}

func testSpaceACLs(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "acls")
	acls, err := p.SpaceACLs(ctx, "acls")
	if err != nil || len(acls) != 0 {
		t.Errorf("SpaceACLs(new space): %v, %v; want empty", acls, err)
	}
	want := h.acls()
	if err := p.SetSpaceACLs(ctx, "acls", want); err != nil {
		t.Fatal(err)
	}
	for _, bad := range h.InvalidACLs {
		wantErr(t, fmt.Sprintf("SetSpaceACLs(%v)", bad), p.SetSpaceACLs(ctx, "acls", bad), storage.ErrInvalidProperty)
		if got, _ := p.SpaceACLs(ctx, "acls"); !maps.Equal(got, want) {
			t.Errorf("SpaceACLs after a refused SetSpaceACLs(%v): %v, want %v", bad, got, want)
		}
	}
	if got, err := p.SpaceACLs(ctx, "acls"); err != nil || !maps.Equal(got, want) {
		t.Errorf("SpaceACLs: %v, %v; want %v", got, err, want)
	}
	mustCreate(t, p, "acls") // creating an existing space keeps its ACLs
	if got, _ := p.SpaceACLs(ctx, "acls"); !maps.Equal(got, want) {
		t.Errorf("SpaceACLs after CreateSpace of an existing space: %v, want %v", got, want)
	}
	if err := p.SetSpaceACLs(ctx, "acls", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.SpaceACLs(ctx, "acls"); len(got) != 0 {
		t.Errorf("SpaceACLs after clearing: %v", got)
	}
	_, err = p.SpaceACLs(ctx, "no-such-space")
	wantErr(t, "SpaceACLs(missing space)", err, storage.ErrNotFound)
	wantErr(t, "SetSpaceACLs(missing space)", p.SetSpaceACLs(ctx, "no-such-space", want), storage.ErrNotFound)
}

func testInvalidIDs(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	for _, s := range []string{"", "a/b", ".hidden", "a\x00b", strings.Repeat("s", storage.MaxSpaceIDLen+1)} {
		wantErr(t, fmt.Sprintf("CreateSpace(%q)", s), p.CreateSpace(ctx, s), storage.ErrInvalidID)
	}
	mustCreate(t, p, "ids")
	maxLen := h.maxIDLen("ids")
	bad := append([]string{"", "nul\x00inside", "bell\x07", strings.Repeat("x", storage.MaxContentIDLen+1), longID(maxLen + 1)}, h.InvalidContentIDs...)
	for _, id := range bad {
		_, err := p.Put(ctx, "ids", id, strings.NewReader("x"), storage.PutOptions{Size: 1})
		wantErr(t, fmt.Sprintf("Put(%q)", shortID(id)), err, storage.ErrInvalidID)
	}
	ids, _, err := p.ListContent(ctx, "ids", "", 100)
	if err != nil || len(ids) != 0 {
		t.Errorf("ListContent after refused puts: %q, %v; want empty", ids, err)
	}
}

// longID builds an ID of exactly n bytes from nested 100-byte segments.
func longID(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		seg := min(99, n-b.Len())
		b.WriteString(strings.Repeat(string(rune('a'+b.Len()%26)), seg))
	}
	return b.String()[:n]
}

func testNotFound(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	// Missing space.
	_, _, err := p.ListContent(ctx, "missing", "", 10)
	wantErr(t, "ListContent(missing space)", err, storage.ErrNotFound)
	_, err = p.Head(ctx, "missing", "a")
	wantErr(t, "Head(missing space)", err, storage.ErrNotFound)
	_, _, err = p.Get(ctx, "missing", "a")
	wantErr(t, "Get(missing space)", err, storage.ErrNotFound)
	_, err = p.Put(ctx, "missing", "a", strings.NewReader("x"), storage.PutOptions{Size: 1})
	wantErr(t, "Put(missing space)", err, storage.ErrNotFound)
	wantErr(t, "SetProperties(missing space)", p.SetProperties(ctx, "missing", "a", map[string]string{"k": "v"}), storage.ErrNotFound)
	if err := p.Delete(ctx, "missing", "a"); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Delete(missing space): %v, want nil or ErrNotFound", err)
	}
	// Missing item.
	mustCreate(t, p, "present")
	_, err = p.Head(ctx, "present", "nope")
	wantErr(t, "Head(missing item)", err, storage.ErrNotFound)
	_, _, err = p.Get(ctx, "present", "nope")
	wantErr(t, "Get(missing item)", err, storage.ErrNotFound)
	wantErr(t, "SetProperties(missing item)", p.SetProperties(ctx, "present", "nope", map[string]string{"k": "v"}), storage.ErrNotFound)
	if err := p.Delete(ctx, "present", "nope"); err != nil {
		t.Errorf("Delete(missing item): %v, want nil (already gone)", err)
	}
	// A prefix of an existing ID, or a "directory" of one, is not an item.
	mustPut(t, p, "present", "dir/file", []byte("x"), storage.PutOptions{})
	for _, id := range []string{"dir", "dir/", "dir/fil"} {
		if _, err := p.Head(ctx, "present", id); !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("Head(%q) next to dir/file: %v, want ErrNotFound", id, err)
		}
	}
	// Deleted item.
	if err := p.Delete(ctx, "present", "dir/file"); err != nil {
		t.Fatal(err)
	}
	_, err = p.Head(ctx, "present", "dir/file")
	wantErr(t, "Head(deleted item)", err, storage.ErrNotFound)
}

func oddIDs(maxLen int) []string {
	return []string{
		"plain.txt",
		"with space.txt",
		"  leading and trailing  ",
		"plus+sign",
		"percent%20encoded%2Fslash",
		"ünïcödé/日本語/файл.txt",
		"emoji 🎉.bin",
		"nested/a/b/c/d/e/f.txt",
		"nested/a",
		"nested/a.txt",
		"nested-a",
		"quote\"s and 'apostrophes'",
		"ampersand&lt;xml>",
		"question?mark#hash",
		"back\\slash",
		"tilde~star*[brackets]{braces}",
		"dots.../in...middle",
		"a/.b/c.",
		longID(maxLen),
	}
}

func testOddIDs(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "odd")
	ids := oddIDs(h.maxIDLen("odd"))
	for _, id := range ids {
		data := []byte("content of " + id)
		info := mustPut(t, p, "odd", id, data, storage.PutOptions{MimeType: "text/plain"})
		if info.ContentID != id {
			t.Errorf("Put(%q).ContentID = %q", shortID(id), shortID(info.ContentID))
		}
		wantContent(t, p, "odd", id, data)
		hi, err := p.Head(ctx, "odd", id)
		if err != nil {
			t.Errorf("Head(%q): %v", shortID(id), err)
		} else if hi.ContentID != id || hi.Size != int64(len(data)) {
			t.Errorf("Head(%q): ContentID %q, Size %d", shortID(id), shortID(hi.ContentID), hi.Size)
		}
	}
	got, more, err := p.ListContent(ctx, "odd", "", 1000)
	if err != nil || more {
		t.Fatalf("ListContent: more=%v, %v", more, err)
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ListContent of odd IDs:\n got %q\nwant %q", got, want)
	}
	for _, id := range ids {
		if err := p.Delete(ctx, "odd", id); err != nil {
			t.Errorf("Delete(%q): %v", shortID(id), err)
		}
	}
	if got, _, _ := p.ListContent(ctx, "odd", "", 1000); len(got) != 0 {
		t.Errorf("ListContent after deleting all: %q", got)
	}
	if err := p.DeleteSpace(ctx, "odd"); err != nil {
		t.Errorf("DeleteSpace after deleting all: %v", err)
	}
}

func testListingOrder(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "list")
	// IDs chosen so that directory-wise and byte-wise order differ
	// ('-', '.', ' ' and '+' sort before '/', '0' and 'a' after it).
	ids := []string{
		"a", "a b", "a+b", "a-b", "a.b", "a/b", "a/b/c", "a/b-c", "a/b.c", "a/c", "a0", "aa",
		"b/a", "b-/a", "b.", "b0/x", "B", "Z", "z", "é", "é/é", "~",
		"c/d/e/f", "c/d-e", "c/d/e-f",
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { mustPut(t, p, "list", id, []byte(id), storage.PutOptions{}) })
	}
	wg.Wait()
	want := slices.Clone(ids)
	slices.Sort(want)

	all, more, err := p.ListContent(ctx, "list", "", 1000)
	if err != nil || more {
		t.Fatalf("ListContent: more=%v, %v", more, err)
	}
	if !slices.Equal(all, want) {
		t.Fatalf("ListContent order:\n got %q\nwant %q", all, want)
	}
	for _, limit := range []int{1, 4, 7, len(ids), len(ids) + 1} {
		var got []string
		marker := ""
		for pages := 0; ; pages++ {
			if pages > len(ids)+2 {
				t.Fatalf("limit %d: listing does not end", limit)
			}
			page, more, err := p.ListContent(ctx, "list", marker, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page))
			}
			got = append(got, page...)
			if !more {
				break
			}
			marker = page[len(page)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged listing (limit %d):\n got %q\nwant %q", limit, got, want)
		}
	}
	// Markers that are not IDs resume at the right place.
	for _, marker := range []string{"a/", "a.c", "a/b/", "b", "c/d/e", "~~", "A"} {
		page, more, err := p.ListContent(ctx, "list", marker, 3)
		if err != nil {
			t.Fatal(err)
		}
		var exp []string
		for _, id := range want {
			if id > marker {
				exp = append(exp, id)
			}
		}
		wantMore := len(exp) > 3
		exp = exp[:min(3, len(exp))]
		if !slices.Equal(page, exp) || more != wantMore {
			t.Errorf("ListContent(after %q, 3) = %q, %v; want %q, %v", marker, page, more, exp, wantMore)
		}
	}
	// storage.Walk sees the same order.
	var walked []string
	for id, err := range storage.Walk(ctx, p, "list", "", 5) {
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, id)
	}
	if !slices.Equal(walked, want) {
		t.Errorf("Walk:\n got %q\nwant %q", walked, want)
	}
}

// testListingChanges pages through a space while items are added before
// and after the marker and deleted after it: every page is exactly the
// first IDs after its marker as the space is when the page is asked for,
// so a provider that keeps anything between pages (fsstore keeps sorted
// directory listings) neither skips nor repeats an item nor lists a
// deleted one.
func testListingChanges(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "chg")
	live := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 100 {
		id := fmt.Sprintf("item-%03d", i*2)
		if i%10 == 0 {
			id = fmt.Sprintf("dir-%d/item-%03d", i%3, i*2)
		}
		live[id] = true
		wg.Go(func() { mustPut(t, p, "chg", id, []byte(id), storage.PutOptions{}) })
	}
	wg.Wait()
	current := func(marker string) []string {
		var ids []string
		for id := range live {
			if id > marker {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	marker := ""
	for page := 0; ; page++ {
		if page > 20 {
			t.Fatal("listing does not end")
		}
		got, more, err := p.ListContent(ctx, "chg", marker, 15)
		if err != nil {
			t.Fatal(err)
		}
		exp := current(marker)
		wantMore := len(exp) > 15
		exp = exp[:min(15, len(exp))]
		if !slices.Equal(got, exp) || more != wantMore {
			t.Fatalf("page %d after %q:\n got %q, %v\nwant %q, %v", page, marker, got, more, exp, wantMore)
		}
		if !more {
			break
		}
		marker = got[len(got)-1]
		// Change the space: an item before the marker (not to be listed),
		// one just after it and one further on (to be listed), and delete
		// the next item due and one in a directory.
		rest := current(marker)
		adds := []string{marker + "-a", marker + "-b", fmt.Sprintf("item-%03d-z", page), fmt.Sprintf("dir-%d/item-new-%d", page%3, page)}
		for _, id := range adds {
			mustPut(t, p, "chg", id, []byte(id), storage.PutOptions{})
			live[id] = true
		}
		for _, id := range rest[:min(2, len(rest))] {
			if err := p.Delete(ctx, "chg", id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
		}
	}
}

// testEntries checks storage.WalkEntries against ListContent and Head:
// the same IDs in the same order, each with its size and storage class,
// after a delete as before it, through every page size; a missing space is
// ErrNotFound.
func testEntries(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "entries")
	sizes := map[string]int{"a": 0, "a/b": 1, "b c": 10, "é": 300, "z/z/z": 4096}
	for id, n := range sizes {
		mustPut(t, p, "entries", id, bytes.Repeat([]byte{'x'}, n), storage.PutOptions{})
	}
	if err := p.Delete(ctx, "entries", "b c"); err != nil {
		t.Fatal(err)
	}
	delete(sizes, "b c")
	want := slices.Sorted(maps.Keys(sizes))
	for _, pageSize := range []int{1, 2, 0} {
		var got []string
		for e, err := range storage.WalkEntries(ctx, p, "entries", "", pageSize) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.ID)
			info, err := p.Head(ctx, "entries", e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if e.Size != int64(sizes[e.ID]) || e.Size != info.Size || e.StorageClass != info.StorageClass {
				t.Errorf("page size %d: entry %+v; Head size %d class %q; put %d bytes", pageSize, e, info.Size, info.StorageClass, sizes[e.ID])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: WalkEntries %q, want %q", pageSize, got, want)
		}
	}
	var after []string
	for e, err := range storage.WalkEntries(ctx, p, "entries", "a/b", 0) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, e.ID)
	}
	if !slices.Equal(after, want[2:]) {
		t.Errorf("WalkEntries after a/b: %q, want %q", after, want[2:])
	}
	var missing error
	for _, err := range storage.WalkEntries(ctx, p, "no-such-space", "", 0) {
		missing = err
	}
	wantErr(t, "WalkEntries of a missing space", missing, storage.ErrNotFound)
}

func testInfoFields(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "info")
	data := []byte("hello, mill\n")
	before := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	put := mustPut(t, p, "info", "docs/hello.txt", data, storage.PutOptions{MimeType: "text/plain", Properties: map[string]string{"k": "v"}})
	after := time.Now().Add(2 * time.Second)
	head, err := p.Head(ctx, "info", "docs/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, got := mustGet(t, p, "info", "docs/hello.txt")
	for name, info := range map[string]*storage.Info{"Put": put, "Head": head, "Get": got} {
		checkInfo(t, h, name, info, "docs/hello.txt", data, "text/plain", before, after)
		if !maps.Equal(info.Properties, map[string]string{"k": "v"}) {
			t.Errorf("%s: Properties %v", name, info.Properties)
		}
	}
	// Unknown size, no checksum, no mimetype: still fully described.
	after = time.Now().Add(time.Minute) // later puts are checked only for a sane time
	info, err := p.Put(ctx, "info", "anon", io.MultiReader(bytes.NewReader(data), bytes.NewReader(data)), storage.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	two := append(slices.Clone(data), data...)
	checkInfo(t, h, "Put(size -1)", info, "anon", two, "", before, after)
	if info.MimeType == "" {
		t.Errorf("Put without a mimetype: Info.MimeType empty, want a default")
	}
	if info.Properties == nil || len(info.Properties) != 0 {
		t.Errorf("Put without properties: Properties %#v, want an empty map", info.Properties)
	}
	// An empty item.
	info = mustPut(t, p, "info", "empty", nil, storage.PutOptions{Size: 0, Checksum: md5hex(nil)})
	checkInfo(t, h, "Put(empty)", info, "empty", nil, "", before, after)
	wantContent(t, p, "info", "empty", nil)
	// Upper-case expected checksums are accepted.
	mustPut(t, p, "info", "upper", data, storage.PutOptions{Checksum: strings.ToUpper(md5hex(data))})
}

func checkInfo(t *testing.T, h *subject, name string, info *storage.Info, id string, data []byte, mime string, before, after time.Time) {
	t.Helper()
	if info == nil {
		t.Fatalf("%s: nil Info", name)
	}
	if info.ContentID != id {
		t.Errorf("%s: ContentID %q, want %q", name, info.ContentID, id)
	}
	if info.Checksum != md5hex(data) {
		t.Errorf("%s: Checksum %q, want %q", name, info.Checksum, md5hex(data))
	}
	h.checkProviderChecksum(t, name, info.ProviderChecksum, data)
	if info.Size != int64(len(data)) {
		t.Errorf("%s: Size %d, want %d", name, info.Size, len(data))
	}
	if mime != "" && info.MimeType != mime {
		t.Errorf("%s: MimeType %q, want %q", name, info.MimeType, mime)
	}
	if info.Modified.Before(before) || info.Modified.After(after) {
		t.Errorf("%s: Modified %v, want within [%v, %v]", name, info.Modified, before, after)
	}
}

// checkProviderChecksum accepts the algorithms Info documents and checks the
// value against data.
func (h *subject) checkProviderChecksum(t *testing.T, name, pc string, data []byte) {
	t.Helper()
	alg, val, ok := storage.SplitProviderChecksum(pc)
	switch {
	case !ok:
		t.Errorf("%s: ProviderChecksum %q has no algorithm prefix", name, pc)
	case slices.Contains(h.UnverifiedChecksums, alg):
		if val == "" {
			t.Errorf("%s: ProviderChecksum %q has no value", name, pc)
		}
	case alg == storage.AlgMD5:
		if val != md5hex(data) {
			t.Errorf("%s: ProviderChecksum %q, want md5:%s", name, pc, md5hex(data))
		}
	case alg == storage.AlgCRC64NVME:
		if want := storage.CRC64NVMEBase64(crc64.Checksum(data, storage.CRC64NVMETable)); val != want {
			t.Errorf("%s: ProviderChecksum %q, want crc64nvme:%s", name, pc, want)
		}
	default:
		t.Errorf("%s: ProviderChecksum %q: unknown algorithm", name, pc)
	}
}

func testOverwrite(t *testing.T, h *subject) {
	p := h.Provider
	mustCreate(t, p, "over")
	mustPut(t, p, "over", "item", []byte("first version"), storage.PutOptions{MimeType: "text/plain", Properties: map[string]string{"v": "1"}})
	mustPut(t, p, "over", "item", []byte("second"), storage.PutOptions{MimeType: "application/json"})
	_, info := mustGet(t, p, "over", "item")
	wantContent(t, p, "over", "item", []byte("second"))
	if info.MimeType != "application/json" || len(info.Properties) != 0 || info.Size != 6 {
		t.Errorf("after overwrite: %+v", info)
	}
}

// testReopen: storage.Reopen reads an item whole again, over a new
// connection, and only the revision the first read saw: once the item is
// rewritten, a provider that reports revisions refuses the old one
// (ErrChanged).
func testReopen(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "reopen")
	data := []byte("the bytes the first read saw")
	mustPut(t, p, "reopen", "item", data, storage.PutOptions{})
	rc, info, err := storage.Open(ctx, p, "reopen", "item", storage.Transfer{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	reread := func(revision string) ([]byte, *storage.Info, error) {
		rc, info, err := storage.Reopen(ctx, p, "reopen", "item", revision, storage.Transfer{})
		if err != nil {
			return nil, nil, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return b, info, err
	}
	got, again, err := reread(info.Revision)
	if err != nil || !bytes.Equal(got, data) || again.Revision != info.Revision || again.Size != info.Size {
		t.Fatalf("Reopen(%q) = %q, %+v, %v; want the same bytes and revision", info.Revision, got, again, err)
	}
	if got, _, err := storage.Open(storage.WithNewConnection(ctx), p, "reopen", "item", storage.Transfer{}); err != nil {
		t.Fatalf("Open under WithNewConnection: %v", err)
	} else {
		b, err := io.ReadAll(got)
		got.Close()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("Open under WithNewConnection read %q, %v", b, err)
		}
	}
	mustPut(t, p, "reopen", "item", []byte("rewritten"), storage.PutOptions{})
	if info.Revision == "" {
		// No revisions: the re-read reads what is there now.
		if got, _, err := reread(""); err != nil || string(got) != "rewritten" {
			t.Fatalf("Reopen without a revision = %q, %v; want the new bytes", got, err)
		}
		return
	}
	if _, _, err := reread(info.Revision); !errors.Is(err, storage.ErrChanged) {
		t.Fatalf("Reopen of the revision before a rewrite: %v; want ErrChanged", err)
	}
	rc, now, err := storage.Open(ctx, p, "reopen", "item", storage.Transfer{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got, _, err := reread(now.Revision); err != nil || string(got) != "rewritten" {
		t.Fatalf("Reopen(%q) of the new revision = %q, %v", now.Revision, got, err)
	}
}

func testProperties(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "props")
	props := h.props(map[string]string{
		"creator":        "alice",
		"Mixed-Case-Key": "Mixed Value",
		"unicode-ключ":   "значение ✓",
		"empty":          "",
		"spaces in key":  "  padded  ",
		"json-ish":       `{"a":[1,2]} \ "q"`,
	})
	data := []byte("properties test")
	mustPut(t, p, "props", "item", data, storage.PutOptions{Properties: props})
	if info, err := p.Head(ctx, "props", "item"); err != nil || !maps.Equal(info.Properties, props) {
		t.Errorf("Head properties: %v, %v; want %v", info.Properties, err, props)
	}
	next := map[string]string{"replaced": "yes", "creator": "bob"}
	if err := p.SetProperties(ctx, "props", "item", next); err != nil {
		t.Fatal(err)
	}
	_, info := mustGet(t, p, "props", "item")
	if !maps.Equal(info.Properties, next) {
		t.Errorf("after SetProperties: %v, want %v", info.Properties, next)
	}
	wantContent(t, p, "props", "item", data)
	if h.HeaderPropertyKeys {
		for _, k := range []string{"Mixed-Case", "ключ", "tab\tkey", "colon:key"} {
			bad := map[string]string{k: "v"}
			_, err := p.Put(ctx, "props", "bad-name", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data)), Properties: bad})
			wantErr(t, fmt.Sprintf("Put(property %q)", k), err, storage.ErrInvalidProperty)
			wantNotFound(t, p, "props", "bad-name")
			wantErr(t, fmt.Sprintf("SetProperties(property %q)", k), p.SetProperties(ctx, "props", "item", bad), storage.ErrInvalidProperty)
		}
		if _, info := mustGet(t, p, "props", "item"); !maps.Equal(info.Properties, next) {
			t.Errorf("after refused SetProperties: %v, want %v", info.Properties, next)
		}
	}
	if err := p.SetProperties(ctx, "props", "item", nil); err != nil {
		t.Fatal(err)
	}
	if info, _ := p.Head(ctx, "props", "item"); len(info.Properties) != 0 || info.Checksum != md5hex(data) {
		t.Errorf("after clearing properties: %+v", info)
	}
	if h.MaxPropertiesSize > 0 {
		big := map[string]string{"big": strings.Repeat("v", h.MaxPropertiesSize)}
		_, err := p.Put(ctx, "props", "too-big", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data)), Properties: big})
		wantErr(t, "Put(too large properties)", err, storage.ErrPropertiesTooLarge)
		wantNotFound(t, p, "props", "too-big")
		wantErr(t, "SetProperties(too large)", p.SetProperties(ctx, "props", "item", big), storage.ErrPropertiesTooLarge)
		if info, _ := p.Head(ctx, "props", "item"); len(info.Properties) != 0 {
			t.Errorf("refused SetProperties changed properties: %v", info.Properties)
		}
	}
}

func testChecksumMismatch(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "sums")
	data := []byte("the real bytes")
	wrong := md5hex([]byte("other bytes"))
	for _, size := range []int64{int64(len(data)), -1} {
		_, err := p.Put(ctx, "sums", "new", bytes.NewReader(data), storage.PutOptions{Size: size, Checksum: wrong})
		wantErr(t, fmt.Sprintf("Put(wrong checksum, size %d)", size), err, storage.ErrChecksumMismatch)
		wantNotFound(t, p, "sums", "new")
	}
	mustPut(t, p, "sums", "old", data, storage.PutOptions{})
	_, err := p.Put(ctx, "sums", "old", strings.NewReader("replacement"), storage.PutOptions{Size: 11, Checksum: wrong})
	wantErr(t, "Put(wrong checksum over existing)", err, storage.ErrChecksumMismatch)
	wantContent(t, p, "sums", "old", data)
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func testFailedPut(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "fail")
	boom := errors.New("reader exploded")
	for _, size := range []int64{100, -1} {
		_, err := p.Put(ctx, "fail", "new", &failingReader{data: []byte("partial"), err: boom}, storage.PutOptions{Size: size})
		if err == nil {
			t.Errorf("Put with a failing reader (size %d): nil error", size)
		}
		wantNotFound(t, p, "fail", "new")
	}
	data := []byte("previous version")
	mustPut(t, p, "fail", "old", data, storage.PutOptions{})
	_, err := p.Put(ctx, "fail", "old", &failingReader{data: []byte("partial"), err: boom}, storage.PutOptions{Size: -1})
	if err == nil {
		t.Errorf("Put with a failing reader over an existing item: nil error")
	}
	wantContent(t, p, "fail", "old", data)
}

func testShortPut(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "short")
	for _, size := range []int64{100, 5} { // fewer bytes than promised; more bytes than promised
		_, err := p.Put(ctx, "short", "item", strings.NewReader("only ten b"), storage.PutOptions{Size: size})
		if err == nil {
			t.Errorf("Put of 10 bytes with Size %d: nil error", size)
		}
		wantNotFound(t, p, "short", "item")
	}
}

// blockingReader yields its data, then blocks until released.
type blockingReader struct {
	data    []byte
	started chan struct{}
	once    sync.Once
	release chan struct{}
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.started) })
	<-r.release
	return 0, errors.New("released")
}

func cancelledPut(t *testing.T, p storage.Provider, space, id string, first []byte, size int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &blockingReader{data: first, started: make(chan struct{}), release: make(chan struct{})}
	defer close(r.release)
	done := make(chan error, 1)
	go func() {
		_, err := p.Put(ctx, space, id, r, storage.PutOptions{Size: size})
		done <- err
	}()
	select {
	case <-r.started:
	case err := <-done:
		t.Fatalf("Put returned before the reader blocked: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Put never drained the reader")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Put: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Put did not return within 30s of its context being cancelled while the reader blocks")
	}
}

func testCancelledPut(t *testing.T, h *subject) {
	p := h.Provider
	mustCreate(t, p, "cancel")
	cancelledPut(t, p, "cancel", "new", []byte("some bytes"), 1000)
	cancelledPut(t, p, "cancel", "new", []byte("some bytes"), -1)
	wantNotFound(t, p, "cancel", "new")
	data := []byte("survives")
	mustPut(t, p, "cancel", "old", data, storage.PutOptions{})
	cancelledPut(t, p, "cancel", "old", []byte("new bytes"), -1)
	wantContent(t, p, "cancel", "old", data)
}

func randBytes(n int64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testLarge(t *testing.T, h *subject) {
	if h.LargeSize <= 0 {
		t.Skip("provider has no separate large-object path")
	}
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "large")
	data := randBytes(h.LargeSize, 1)
	// Known size with checksum, unknown size without.
	info := mustPut(t, p, "large", "known", data, storage.PutOptions{Checksum: md5hex(data), MimeType: "application/x-big", Properties: map[string]string{"k": "v"}})
	checkInfo(t, h, "Put(large)", info, "known", data, "application/x-big", time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	head, err := p.Head(ctx, "large", "known")
	if err != nil {
		t.Fatal(err)
	}
	checkInfo(t, h, "Head(large)", head, "known", data, "application/x-big", time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	if !maps.Equal(head.Properties, map[string]string{"k": "v"}) {
		t.Errorf("Head(large).Properties = %v", head.Properties)
	}
	wantContent(t, p, "large", "known", data)
	info, err = p.Put(ctx, "large", "unknown", bytes.NewReader(data), storage.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	checkInfo(t, h, "Put(large, size -1)", info, "unknown", data, "", time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	wantContent(t, p, "large", "unknown", data)
	// Properties change keeps the content and checksums.
	if err := p.SetProperties(ctx, "large", "unknown", map[string]string{"p": "q"}); err != nil {
		t.Fatal(err)
	}
	if head, err := p.Head(ctx, "large", "unknown"); err != nil || head.Checksum != md5hex(data) || !maps.Equal(head.Properties, map[string]string{"p": "q"}) {
		t.Errorf("Head after SetProperties(large): %+v, %v", head, err)
	}
	// Mismatch, failure and cancellation commit nothing.
	for _, size := range []int64{h.LargeSize, -1} {
		_, err = p.Put(ctx, "large", "bad", bytes.NewReader(data), storage.PutOptions{Size: size, Checksum: md5hex([]byte("no"))})
		wantErr(t, fmt.Sprintf("Put(large, wrong checksum, size %d)", size), err, storage.ErrChecksumMismatch)
		wantNotFound(t, p, "large", "bad")
	}
	_, err = p.Put(ctx, "large", "known", &failingReader{data: data[:len(data)-1], err: errors.New("late failure")}, storage.PutOptions{Size: h.LargeSize})
	if err == nil {
		t.Error("Put(large, failing reader): nil error")
	}
	wantContent(t, p, "large", "known", data)
	cancelledPut(t, p, "large", "known", data[:len(data)-1], h.LargeSize)
	wantContent(t, p, "large", "known", data)
}

func testCopy(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "src")
	mustCreate(t, p, "dst")
	data := []byte("copy me")
	props := h.props(map[string]string{"creator": "alice", "ключ": "значение"})
	mustPut(t, p, "src", "dir/item.txt", data, storage.PutOptions{MimeType: "text/plain", Properties: props})
	info, err := storage.Copy(ctx, p, "src", "dir/item.txt", p, "dst")
	if err != nil {
		t.Fatal(err)
	}
	checkInfo(t, h, "Copy", info, "dir/item.txt", data, "text/plain", time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	_, got := mustGet(t, p, "dst", "dir/item.txt")
	wantContent(t, p, "dst", "dir/item.txt", data)
	if got.MimeType != "text/plain" || !maps.Equal(got.Properties, props) {
		t.Errorf("copied item: %+v", got)
	}
	_, err = storage.Copy(ctx, p, "src", "missing", p, "dst")
	wantErr(t, "Copy(missing item)", err, storage.ErrNotFound)
	_, err = storage.Copy(ctx, p, "src", "dir/item.txt", p, "no-such-space")
	wantErr(t, "Copy(to missing space)", err, storage.ErrNotFound)
	if h.LargeSize > 0 {
		big := randBytes(h.LargeSize, 2)
		mustPut(t, p, "src", "big", big, storage.PutOptions{Properties: props})
		info, err := storage.Copy(ctx, p, "src", "big", p, "dst")
		if err != nil {
			t.Fatal(err)
		}
		checkInfo(t, h, "Copy(large)", info, "big", big, "", time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
		wantContent(t, p, "dst", "big", big)
		if head, _ := p.Head(ctx, "dst", "big"); !maps.Equal(head.Properties, props) {
			t.Errorf("Copy(large) properties: %v", head.Properties)
		}
	}
}

func testCorrupt(t *testing.T, h *subject) {
	if h.Corrupt == nil {
		t.Skip("provider cannot be corrupted behind its back")
	}
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "sour")
	mustCreate(t, p, "dst")
	data := []byte("pristine content")
	mustPut(t, p, "sour", "item", data, storage.PutOptions{})
	h.Corrupt(t, "sour", "item")
	got, info := mustGet(t, p, "sour", "item")
	if info.Checksum != md5hex(data) {
		t.Errorf("after corruption Info.Checksum = %s, want the recorded %s", info.Checksum, md5hex(data))
	}
	if md5hex(got) == info.Checksum {
		t.Fatalf("Corrupt did not change the content")
	}
	_, err := storage.Copy(ctx, p, "sour", "item", p, "dst")
	wantErr(t, "Copy(sour content)", err, storage.ErrChecksumMismatch)
	wantNotFound(t, p, "dst", "item")
}

func testReplaced(t *testing.T, h *subject) {
	if h.Replace == nil {
		t.Skip("provider cannot be written behind its back")
	}
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "replaced")
	mustCreate(t, p, "dst")
	data := []byte("the bytes the provider wrote")
	for _, tc := range []struct{ id, with string }{
		{"longer", "replaced by longer bytes, its MD5 kept"},
		{"same-size", "THE BYTES THE PROVIDER WROTE"},
	} {
		mustPut(t, p, "replaced", tc.id, data, storage.PutOptions{})
		h.Replace(t, "replaced", tc.id, []byte(tc.with))
		head, err := p.Head(ctx, "replaced", tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if c := storage.ChecksumOf(head, nil); c.MD5 != md5hex([]byte(tc.with)) || !c.ClaimContradicted || c.Holds(md5hex(data)) {
			t.Errorf("%s: Head %+v: %s; want the new bytes' MD5 %s from the provider, the kept %s contradicted",
				tc.id, head, c, md5hex([]byte(tc.with)), md5hex(data))
		}
		got, info := mustGet(t, p, "replaced", tc.id)
		sums := storage.NewSums()
		sums.Write(got)
		if c := storage.ChecksumOf(info, sums); string(got) != tc.with || !c.ClaimContradicted || c.ProviderContradicted {
			t.Errorf("%s: Get %q %+v: %s; want the new bytes, the kept MD5 contradicted, the provider not", tc.id, got, info, c)
		}
		_, err = storage.Copy(ctx, p, "replaced", tc.id, p, "dst")
		wantErr(t, "Copy(replaced content)", err, storage.ErrChecksumMismatch)
		wantNotFound(t, p, "dst", tc.id)
	}
}

func testConcurrent(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	mustCreate(t, p, "conc")
	const workers, rounds = 8, 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("w%d/item-%d", w, i)
				data := randBytes(int64(1000+w*100+i), uint64(w*100+i))
				if _, err := p.Put(ctx, "conc", id, bytes.NewReader(data), storage.PutOptions{Size: int64(len(data)), Checksum: md5hex(data)}); err != nil {
					t.Errorf("Put(%s): %v", id, err)
					return
				}
				// Everyone also rewrites and reads one shared item: every
				// Get must see one whole version, matching its Info.
				shared := randBytes(int64(500+w), uint64(w))
				if _, err := p.Put(ctx, "conc", "shared", bytes.NewReader(shared), storage.PutOptions{Size: int64(len(shared))}); err != nil {
					t.Errorf("Put(shared): %v", err)
					return
				}
				rc, info, err := p.Get(ctx, "conc", "shared")
				if err != nil {
					t.Errorf("Get(shared): %v", err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || md5hex(b) != info.Checksum || int64(len(b)) != info.Size {
					t.Errorf("Get(shared): %d bytes md5 %s, Info says %d bytes md5 %s (%v)", len(b), md5hex(b), info.Size, info.Checksum, err)
				}
				if _, _, err := p.ListContent(ctx, "conc", "", 10); err != nil {
					t.Errorf("ListContent: %v", err)
				}
			}
		})
	}
	wg.Wait()
	ids, more, err := p.ListContent(ctx, "conc", "", 1000)
	if err != nil || more || len(ids) != workers*rounds+1 {
		t.Errorf("ListContent after concurrent puts: %d IDs, more=%v, %v; want %d", len(ids), more, err, workers*rounds+1)
	}
}

func recoverer(t *testing.T, h *subject) storage.Recoverer {
	t.Helper()
	r, ok := h.Provider.(storage.Recoverer)
	if !ok {
		t.Fatalf("%T does not implement storage.Recoverer: what Mill deletes or replaces must stay recoverable", h.Provider)
	}
	return r
}

func mustVersions(t *testing.T, r storage.Recoverer, space, id string) []storage.Version {
	t.Helper()
	vs, err := r.Versions(ctxT(t), space, id)
	if err != nil {
		t.Fatalf("Versions(%q, %q): %v", space, shortID(id), err)
	}
	for i := 1; i < len(vs); i++ {
		if vs[i].Replaced.After(vs[i-1].Replaced) {
			t.Errorf("Versions(%q, %q): not newest first: %v before %v", space, shortID(id), vs[i-1].Replaced, vs[i].Replaced)
		}
	}
	return vs
}

// wantVersion checks one Version against the content, properties and
// mimetype it should hold and why it was replaced.
func wantVersion(t *testing.T, what string, v storage.Version, reason string, data []byte, mime string, props map[string]string) {
	t.Helper()
	if v.ID == "" {
		t.Errorf("%s: empty version ID", what)
	}
	if v.Reason != reason {
		t.Errorf("%s: Reason %q, want %q", what, v.Reason, reason)
	}
	if v.Info.Checksum != md5hex(data) || v.Info.Size != int64(len(data)) {
		t.Errorf("%s: MD5 %s size %d, want %s and %d", what, v.Info.Checksum, v.Info.Size, md5hex(data), len(data))
	}
	if v.Info.MimeType != mime || !maps.Equal(v.Info.Properties, props) {
		t.Errorf("%s: mimetype %q properties %v, want %q and %v", what, v.Info.MimeType, v.Info.Properties, mime, props)
	}
	if v.Replaced.IsZero() || v.Replaced.After(time.Now().Add(time.Minute)) {
		t.Errorf("%s: Replaced %v", what, v.Replaced)
	}
}

func wantHead(t *testing.T, p storage.Provider, space, id string, data []byte, mime string, props map[string]string) {
	t.Helper()
	wantContent(t, p, space, id, data)
	info, err := p.Head(ctxT(t), space, id)
	if err != nil {
		t.Fatalf("Head(%q, %q): %v", space, shortID(id), err)
	}
	if info.MimeType != mime || !maps.Equal(info.Properties, props) {
		t.Errorf("Head(%q, %q): mimetype %q properties %v, want %q and %v", space, shortID(id), info.MimeType, info.Properties, mime, props)
	}
}

// testRecoverable checks the storage.Recoverer contract: deletes,
// overwrites and property changes keep what they replace, first and failed
// writes keep nothing, versions stay out of listings and survive the
// space, and Restore brings any of them back (keeping what it replaces).
func testRecoverable(t *testing.T, h *subject) {
	p, ctx := h.Provider, ctxT(t)
	r := recoverer(t, h)
	mustCreate(t, p, "rec")
	const id = "dir/ïtem one"
	v1, v2 := []byte("version one"), []byte("version two, longer")
	p1, p2, p3 := map[string]string{"v": "1"}, h.props(map[string]string{"v": "2", "ключ": "значение"}), map[string]string{"v": "3"}
	mustPut(t, p, "rec", id, v1, storage.PutOptions{MimeType: "text/plain", Properties: p1})
	if vs := mustVersions(t, r, "rec", id); len(vs) != 0 {
		t.Fatalf("after a first write: %d versions, want none (a first write keeps nothing)", len(vs))
	}
	mustPut(t, p, "rec", id, v2, storage.PutOptions{MimeType: "application/json", Properties: p2})
	_, err := p.Put(ctx, "rec", id, bytes.NewReader(v1), storage.PutOptions{Size: int64(len(v1)), Checksum: md5hex([]byte("other"))})
	wantErr(t, "Put(wrong checksum)", err, storage.ErrChecksumMismatch)
	if vs := mustVersions(t, r, "rec", id); len(vs) != 1 {
		t.Fatalf("after an overwrite and a failed put: %d versions, want 1", len(vs))
	}
	if err := p.SetProperties(ctx, "rec", id, p3); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second delete finds nothing and keeps nothing
		if err := p.Delete(ctx, "rec", id); err != nil {
			t.Fatal(err)
		}
	}
	vs := mustVersions(t, r, "rec", id)
	if len(vs) != 3 {
		t.Fatalf("after overwrite, properties, delete: %d versions, want 3: %+v", len(vs), vs)
	}
	wantVersion(t, "deleted version", vs[0], storage.ReplacedByDelete, v2, "application/json", p3)
	wantVersion(t, "properties version", vs[1], storage.ReplacedByProperties, v2, "application/json", p2)
	wantVersion(t, "overwritten version", vs[2], storage.ReplacedByOverwrite, v1, "text/plain", p1)
	if vs[0].ID == vs[1].ID || vs[1].ID == vs[2].ID || vs[0].ID == vs[2].ID {
		t.Errorf("version IDs not distinct: %q %q %q", vs[0].ID, vs[1].ID, vs[2].ID)
	}
	// Versions are not content and not spaces.
	if ids, _, err := p.ListContent(ctx, "rec", "", 100); err != nil || len(ids) != 0 {
		t.Errorf("ListContent after the delete: %q, %v; want nothing (versions are not content)", ids, err)
	}
	if spaces, err := p.ListSpaces(ctx); err != nil || !slices.Equal(spaces, []string{"rec"}) {
		t.Errorf("ListSpaces: %q, %v; want [rec]", spaces, err)
	}

	// The newest version by default.
	info, err := r.Restore(ctx, "rec", id, "")
	if err != nil {
		t.Fatalf("Restore(newest): %v", err)
	}
	if info.Checksum != md5hex(v2) || !maps.Equal(info.Properties, p3) {
		t.Errorf("Restore(newest) Info: %+v", info)
	}
	wantHead(t, p, "rec", id, v2, "application/json", p3)
	// An older one by ID; what it replaces becomes a version.
	if _, err := r.Restore(ctx, "rec", id, vs[2].ID); err != nil {
		t.Fatalf("Restore(%s): %v", vs[2].ID, err)
	}
	wantHead(t, p, "rec", id, v1, "text/plain", p1)
	after := mustVersions(t, r, "rec", id)
	if len(after) != 4 {
		t.Fatalf("after restoring over the item: %d versions, want 4", len(after))
	}
	wantVersion(t, "version replaced by a restore", after[0], storage.ReplacedByOverwrite, v2, "application/json", p3)

	_, err = r.Restore(ctx, "rec", id, "no-such-version")
	wantErr(t, "Restore(unknown version)", err, storage.ErrNotFound)
	_, err = r.Restore(ctx, "rec", "never-was", "")
	wantErr(t, "Restore(item without versions)", err, storage.ErrNotFound)
	if vs := mustVersions(t, r, "rec", "never-was"); len(vs) != 0 {
		t.Errorf("Versions(never-was): %d", len(vs))
	}
	_, err = r.Versions(ctx, "rec", "")
	wantErr(t, "Versions(empty ID)", err, storage.ErrInvalidID)
	_, err = r.Versions(ctx, "../rec", id)
	wantErr(t, "Versions(invalid space)", err, storage.ErrInvalidID)

	// Versions outlive their space.
	if err := p.Delete(ctx, "rec", id); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSpace(ctx, "rec"); err != nil {
		t.Fatal(err)
	}
	if vs := mustVersions(t, r, "rec", id); len(vs) != 5 {
		t.Errorf("after DeleteSpace: %d versions, want 5", len(vs))
	}
	_, err = r.Restore(ctx, "rec", id, "")
	wantErr(t, "Restore(into a deleted space)", err, storage.ErrNotFound)
	mustCreate(t, p, "rec")
	if _, err := r.Restore(ctx, "rec", id, ""); err != nil {
		t.Fatalf("Restore after re-creating the space: %v", err)
	}
	wantHead(t, p, "rec", id, v1, "text/plain", p1)

	if h.LargeSize > 0 {
		big := randBytes(h.LargeSize, 3)
		mustPut(t, p, "rec", "big", big, storage.PutOptions{Properties: p1})
		mustPut(t, p, "rec", "big", v1, storage.PutOptions{})
		if _, err := r.Restore(ctx, "rec", "big", ""); err != nil {
			t.Fatalf("Restore(large): %v", err)
		}
		wantHead(t, p, "rec", "big", big, storage.DefaultMimeType, p1)
	}
}

// testRecoverableCopy checks that storage.Copy over an existing item (a
// server-side copy where the provider has one) keeps what it replaces.
func testRecoverableCopy(t *testing.T, h *subject) {
	p := h.Provider
	r := recoverer(t, h)
	mustCreate(t, p, "from")
	mustCreate(t, p, "dest")
	old, cur := []byte("old at the destination"), []byte("current at the source")
	mustPut(t, p, "from", "item", cur, storage.PutOptions{})
	if _, err := storage.Copy(ctxT(t), p, "from", "item", p, "dest"); err != nil {
		t.Fatal(err)
	}
	if vs := mustVersions(t, r, "dest", "item"); len(vs) != 0 {
		t.Errorf("after a copy to a new item: %d versions, want none", len(vs))
	}
	mustPut(t, p, "dest", "item", old, storage.PutOptions{MimeType: "text/plain"})
	if _, err := storage.Copy(ctxT(t), p, "from", "item", p, "dest"); err != nil {
		t.Fatal(err)
	}
	vs := mustVersions(t, r, "dest", "item")
	if len(vs) != 2 {
		t.Fatalf("after copying over an existing item twice: %d versions, want 2", len(vs))
	}
	wantVersion(t, "version replaced by a copy", vs[0], storage.ReplacedByOverwrite, old, "text/plain", map[string]string{})
}
