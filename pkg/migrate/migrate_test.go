package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/migrate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// souring serves one item's bytes with a byte flipped, as a source whose
// copy went sour after DuraCloud recorded its MD5.
type souring struct {
	storage.Provider
	space, id string
}

func (s souring) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	rc, info, err := s.Provider.Get(ctx, space, id)
	if err != nil || space != s.space || id != s.id {
		return rc, info, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, nil, err
	}
	b[0] ^= 1
	return io.NopCloser(bytes.NewReader(b)), info, nil
}

// counting counts the destination's writes.
type counting struct {
	storage.Provider
	puts atomic.Int64
}

func (c *counting) Put(ctx context.Context, space, id string, r io.Reader, o storage.PutOptions) (*storage.Info, error) {
	c.puts.Add(1)
	return c.Provider.Put(ctx, space, id, r, o)
}

func newFS(t *testing.T) *fsstore.Store {
	t.Helper()
	s, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, p storage.Provider, space, id, body string, props map[string]string) {
	t.Helper()
	if _, err := p.Put(t.Context(), space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain", Properties: props}); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, cfg migrate.Config) *migrate.Summary {
	t.Helper()
	s := migrate.NewSummary(time.Time{})
	if err := migrate.Migrate(t.Context(), cfg, s.Add); err != nil {
		t.Fatal(err)
	}
	return s
}

// Three spaces, one item gone sour at the source: every other item is
// copied with its mimetype and properties and verified, the space ACLs
// come along, the sour one is reported corrupt and not written; a second
// run writes nothing and skips every item copied.
func TestMigrateResumesAndRefusesCorrupt(t *testing.T) {
	ctx := t.Context()
	src, dstFS := newFS(t), newFS(t)
	items := map[string]string{"photos/a.jpg": "jpeg", "photos/2024/b.txt": "bee", "docs/readme": "# hi", "empty/x": ""}
	for _, sp := range []string{"photos", "docs", "empty"} {
		if err := src.CreateSpace(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.SetSpaceACLs(ctx, "photos", map[string]string{"alice": "READ"}); err != nil {
		t.Fatal(err)
	}
	for k, v := range items {
		sp, id, _ := strings.Cut(k, "/")
		put(t, src, sp, id, v, map[string]string{"creator": "alice " + id})
	}
	put(t, src, "docs", "sour", "sour bytes", nil)
	dst := &counting{Provider: dstFS}
	cfg := migrate.Config{Source: souring{Provider: src, space: "docs", id: "sour"}, Dest: dst, Workers: 3}

	s := run(t, cfg)
	if s.Items[migrate.Copied] != len(items) || s.Items[migrate.Corrupt] != 1 || len(s.Problems) != 1 {
		t.Fatalf("first run: %v, problems %+v; want %d copied, 1 corrupt", s.Items, s.Problems, len(items))
	}
	if p := s.Problems[0]; p.Space != "docs" || p.ContentID != "sour" || !strings.Contains(p.Detail, "not copied") {
		t.Errorf("problem %+v, want docs/sour corrupt, not copied", p)
	}
	if _, err := dstFS.Head(ctx, "docs", "sour"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the corrupt item at the destination: %v, want not found", err)
	}
	for k, v := range items {
		sp, id, _ := strings.Cut(k, "/")
		rc, info, err := dstFS.Get(ctx, sp, id)
		if err != nil {
			t.Fatalf("%s at the destination: %v", k, err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != v || info.MimeType != "text/plain" || !maps.Equal(info.Properties, map[string]string{"creator": "alice " + id}) {
			t.Errorf("%s at the destination: %q %s %v", k, b, info.MimeType, info.Properties)
		}
	}
	if acls, err := dstFS.SpaceACLs(ctx, "photos"); err != nil || !maps.Equal(acls, map[string]string{"alice": "READ"}) {
		t.Errorf("photos ACLs at the destination: %v, %v", acls, err)
	}
	first := dst.puts.Load()

	s = run(t, cfg)
	if n := dst.puts.Load() - first; n != 1 {
		t.Errorf("second run: %d writes, want 1 (the corrupt item tried again and refused again)", n)
	}
	if s.Items[migrate.Skipped] != len(items) || s.Items[migrate.Copied] != 0 || s.Items[migrate.Corrupt] != 1 {
		t.Errorf("second run: %v, want %d skipped, 1 corrupt", s.Items, len(items))
	}
}

// An item the destination holds with other content is reported and left
// as it is.
func TestMigrateNeverOverwrites(t *testing.T) {
	ctx := t.Context()
	src, dstFS := newFS(t), newFS(t)
	for _, p := range []storage.Provider{src, dstFS} {
		if err := p.CreateSpace(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	put(t, src, "s", "x", "duracloud's", nil)
	put(t, dstFS, "s", "x", "someone else's", nil)
	dst := &counting{Provider: dstFS}
	s := run(t, migrate.Config{Source: src, Dest: dst, Spaces: []string{"s"}})
	if s.Items[migrate.Differs] != 1 || dst.puts.Load() != 0 {
		t.Errorf("%v, %d writes; want 1 differs, none written", s.Items, dst.puts.Load())
	}
	rc, _, err := dstFS.Get(ctx, "s", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "someone else's" {
		t.Errorf("destination now %q", b)
	}
}

// refusing is a destination that cannot hold one ID, or one item's
// properties.
type refusing struct{ storage.Provider }

func (r refusing) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	if id == "bad-id" {
		return nil, fmt.Errorf("head %s: %w", id, storage.ErrInvalidID)
	}
	return r.Provider.Head(ctx, space, id)
}

func (r refusing) Put(ctx context.Context, space, id string, rd io.Reader, o storage.PutOptions) (*storage.Info, error) {
	if id == "bad-props" {
		return nil, fmt.Errorf("put %s: %w", id, storage.ErrPropertiesTooLarge)
	}
	return r.Provider.Put(ctx, space, id, rd, o)
}

// What the destination refuses for what the item is is refused (a later
// run would fail the same way), not failed.
func TestMigrateDestinationRefuses(t *testing.T) {
	ctx := t.Context()
	src, dstFS := newFS(t), newFS(t)
	if err := src.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bad-id", "bad-props", "good"} {
		put(t, src, "s", id, id, nil)
	}
	s := run(t, migrate.Config{Source: src, Dest: refusing{dstFS}})
	if s.Items[migrate.Refused] != 2 || s.Items[migrate.Copied] != 1 || s.Items[migrate.Failed] != 0 {
		t.Errorf("%v, problems %+v; want 2 refused, 1 copied", s.Items, s.Problems)
	}
}

// A copy that does not verify when read back (its bytes went sour at the
// destination right after the write) is reported failed and removed, so
// the next run copies it again instead of skipping it by the checksum
// recorded with the write.
func TestMigrateRemovesUnverifiedCopy(t *testing.T) {
	ctx := t.Context()
	src, dstFS := newFS(t), newFS(t)
	if err := src.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	put(t, src, "s", "x", "the bytes", nil)
	s := run(t, migrate.Config{Source: src, Dest: souring{Provider: dstFS, space: "s", id: "x"}})
	if s.Items[migrate.Failed] != 1 || s.Items[migrate.Copied] != 0 {
		t.Fatalf("first run: %v, problems %+v; want 1 failed", s.Items, s.Problems)
	}
	if _, err := dstFS.Head(ctx, "s", "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the unverified copy at the destination: %v, want it removed", err)
	}
	s = run(t, migrate.Config{Source: src, Dest: dstFS})
	if s.Items[migrate.Copied] != 1 || s.Items[migrate.Skipped] != 0 {
		t.Errorf("second run: %v, want the item copied again, not skipped", s.Items)
	}
}
