package audited_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
)

var start = time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)

type harness struct {
	inner storage.Provider
	q     *memqueue.Queue
	p     *audited.Provider
	clk   *clock.Fake
	seen  int
}

func setup(t *testing.T, format task.Format) *harness {
	t.Helper()
	return setupOn(t, newFakeStore(), format)
}

func setupOn(t *testing.T, inner storage.Provider, format task.Format) *harness {
	t.Helper()
	clk := clock.NewFake(start)
	h := &harness{inner: inner, q: memqueue.New("audit", memqueue.Config{Clock: clk}), clk: clk}
	p, err := audited.New(h.inner, h.q, audited.Config{Account: "acct1", StoreID: "1", UserID: "alice", Format: format, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	return h
}

// next returns the tasks queued since the last call.
func (h *harness) next(t *testing.T) []*task.Task {
	t.Helper()
	msgs := h.q.Messages()
	var out []*task.Task
	for _, m := range msgs[h.seen:] {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatalf("undecodable AUDIT body %q: %v", m.Body, err)
		}
		if m.Group != tk.Get(task.KeyAccount) || m.Group == "" {
			t.Fatalf("AUDIT task of account %q sent with group %q", tk.Get(task.KeyAccount), m.Group)
		}
		out = append(out, tk)
	}
	h.seen = len(msgs)
	return out
}

// one asserts exactly one AUDIT task was queued and that its properties are
// exactly want plus the ones every event carries.
func (h *harness) one(t *testing.T, want map[string]string) {
	t.Helper()
	got := h.next(t)
	if len(got) != 1 {
		t.Fatalf("queued %d tasks, want 1: %v", len(got), got)
	}
	tk := got[0]
	if tk.Type != task.TypeAudit {
		t.Fatalf("type %s", tk.Type)
	}
	all := map[string]string{
		"account": "acct1", "storeId": "1", "user-id": "alice", "store-type": "fs",
		"date-time": strconv.FormatInt(h.clk.Now().UnixMilli(), 10),
	}
	maps.Copy(all, want)
	if !maps.Equal(tk.Props, all) {
		t.Fatalf("props:\n got %v\nwant %v", tk.Props, all)
	}
	// The typed view accepts it (what the audit processor reads).
	a, err := task.AuditFrom(tk)
	if err != nil {
		t.Fatalf("AuditFrom: %v", err)
	}
	if string(a.Action) != all["action"] || a.DateTime.UnixMilli() != h.clk.Now().UnixMilli() {
		t.Fatalf("typed view %+v", a)
	}
}

func (h *harness) none(t *testing.T) {
	t.Helper()
	if got := h.next(t); len(got) != 0 {
		t.Fatalf("reads queued %d tasks: %v", len(got), got)
	}
}

func TestEveryWriteEmitsOneAuditTask(t *testing.T) {
	for _, f := range []task.Format{task.FormatJSON, task.FormatProperties} {
		t.Run(f.String(), func(t *testing.T) {
			testWrites(t, setup(t, f))
		})
	}
}

func TestEveryWriteEmitsOneAuditTaskOnFSStore(t *testing.T) {
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testWrites(t, setupOn(t, fs, task.FormatJSON))
}

func testWrites(t *testing.T, h *harness) {
	ctx := context.Background()
	p := h.p

	if err := p.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "photos", "action": "CREATE_SPACE"})

	h.clk.Advance(time.Second)
	if err := p.SetSpaceACLs(ctx, "photos", map[string]string{"acl-group-x": "WRITE", "acl-bob": "READ"}); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "photos", "action": "SET_SPACE_ACLS", "space-acls": `{"acl-bob":"READ","acl-group-x":"WRITE"}`})

	info, err := p.Put(ctx, "photos", "a/b c.jpg", strings.NewReader("hello"), storage.PutOptions{Size: 5, MimeType: "image/jpeg", Properties: map[string]string{"owner": "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.Checksum != "5d41402abc4b2a76b9719d911017c592" {
		t.Fatalf("checksum %s", info.Checksum)
	}
	h.one(t, map[string]string{"spaceId": "photos", "contentId": "a/b c.jpg", "action": "ADD_CONTENT",
		"content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-mimetype": "image/jpeg", "content-size": "5",
		"content-properties": `{"owner":"alice"}`})

	if err := p.SetProperties(ctx, "photos", "a/b c.jpg", map[string]string{"owner": "bob", "tag": "<x&y>"}); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "photos", "contentId": "a/b c.jpg", "action": "SET_CONTENT_PROPERTIES",
		"content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-mimetype": "image/jpeg", "content-size": "5",
		"content-properties": `{"owner":"bob","tag":"<x&y>"}`})

	if err := p.CreateSpace(ctx, "backup"); err != nil {
		t.Fatal(err)
	}
	h.next(t)
	if _, err := p.Copy(ctx, nil, "photos", "a/b c.jpg", "backup", "copy.jpg"); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "backup", "contentId": "copy.jpg", "action": "COPY_CONTENT",
		"content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-mimetype": "image/jpeg", "content-size": "5",
		"content-properties": `{"owner":"bob","tag":"<x&y>"}`, "source-space-id": "photos", "source-content-id": "a/b c.jpg"})

	// Reads emit nothing.
	if _, err := p.ListSpaces(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.ListContent(ctx, "photos", "", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Head(ctx, "photos", "a/b c.jpg"); err != nil {
		t.Fatal(err)
	}
	rc, _, err := p.Get(ctx, "photos", "a/b c.jpg")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	if _, err := p.SpaceACLs(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	h.none(t)

	// DELETE_CONTENT carries what the item was before the delete.
	if err := p.Delete(ctx, "photos", "a/b c.jpg"); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "photos", "contentId": "a/b c.jpg", "action": "DELETE_CONTENT",
		"content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-mimetype": "image/jpeg", "content-size": "5",
		"content-properties": `{"owner":"bob","tag":"<x&y>"}`})
	// Deleting what is gone succeeds and changes nothing: no event.
	if err := p.Delete(ctx, "photos", "a/b c.jpg"); err != nil {
		t.Fatal(err)
	}
	h.none(t)

	if err := p.DeleteSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	h.one(t, map[string]string{"spaceId": "photos", "action": "DELETE_SPACE"})
}

func TestFailedWritesEmitNothing(t *testing.T) {
	h := setup(t, task.FormatJSON)
	ctx := context.Background()
	if _, err := h.p.Put(ctx, "nospace", "x", strings.NewReader("x"), storage.PutOptions{Size: 1}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Put to a missing space = %v", err)
	}
	_ = h.p.CreateSpace(ctx, "s")
	h.next(t)
	if _, err := h.p.Put(ctx, "s", "x", strings.NewReader("x"), storage.PutOptions{Size: 1, Checksum: "00000000000000000000000000000000"}); !errors.Is(err, storage.ErrChecksumMismatch) {
		t.Fatalf("Put with a wrong checksum = %v", err)
	}
	if err := h.p.SetProperties(ctx, "s", "missing", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := h.p.Copy(ctx, nil, "s", "missing", "s", "y"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	h.none(t)
}

// failingQueue refuses every send.
type failingQueue struct{ queue.Queue }

func (failingQueue) Name() string { return "mill-audit" }
func (failingQueue) Send(context.Context, ...queue.SendEntry) error {
	return errors.New("sqs unavailable")
}

func TestQueueFailureIsReportedNotDropped(t *testing.T) {
	inner := newFakeStore()
	p, err := audited.New(inner, failingQueue{}, audited.Config{Account: "acct1", StoreID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = p.CreateSpace(ctx, "s")
	if !errors.Is(err, audited.ErrNotAudited) || !strings.Contains(err.Error(), "CREATE_SPACE s on store acct1/1 succeeded") || !strings.Contains(err.Error(), "sqs unavailable") {
		t.Fatalf("err = %v", err)
	}
	if sp, _ := inner.ListSpaces(ctx); len(sp) != 1 {
		t.Fatal("the write itself must have happened")
	}
	info, err := p.Put(ctx, "s", "c", strings.NewReader("abc"), storage.PutOptions{Size: 3})
	if !errors.Is(err, audited.ErrNotAudited) || info == nil || info.Size != 3 {
		t.Fatalf("Put = %v, %v; want the Info and ErrNotAudited", info, err)
	}
}

func TestConfigValidation(t *testing.T) {
	q := memqueue.New("a", memqueue.Config{})
	if _, err := audited.New(newFakeStore(), q, audited.Config{}); err == nil ||
		!strings.Contains(err.Error(), "Account") || !strings.Contains(err.Error(), "StoreID") {
		t.Fatalf("err = %v", err)
	}
	p, err := audited.New(newFakeStore(), q, audited.Config{Account: "a", StoreID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Unwrap() == nil || p.Kind() != storage.KindFS {
		t.Fatal("Unwrap/Kind")
	}
}

// TestRestoreIsAudited: a restore through the decorator is recorded as
// COPY_CONTENT whose source is the item itself, naming the version; listing
// versions is a read and emits nothing.
func TestRestoreIsAudited(t *testing.T) {
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := setupOn(t, fs, task.FormatJSON)
	ctx := context.Background()
	if err := h.p.CreateSpace(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.p.Put(ctx, "sp", "doc", strings.NewReader("hello"), storage.PutOptions{Size: 5, MimeType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	if err := h.p.Delete(ctx, "sp", "doc"); err != nil {
		t.Fatal(err)
	}
	h.next(t)
	vs, err := h.p.Versions(ctx, "sp", "doc")
	if err != nil || len(vs) != 1 {
		t.Fatalf("Versions: %v, %v", vs, err)
	}
	h.none(t)
	h.clk.Advance(time.Second)
	info, err := h.p.Restore(ctx, "sp", "doc", "") // the newest, named in the task
	if err != nil || info.Checksum != "5d41402abc4b2a76b9719d911017c592" {
		t.Fatalf("Restore: %+v, %v", info, err)
	}
	h.one(t, map[string]string{"spaceId": "sp", "contentId": "doc", "action": "COPY_CONTENT",
		"content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-mimetype": "text/plain", "content-size": "5",
		"content-properties": `{}`, "source-space-id": "sp", "source-content-id": "doc", "restored-version": vs[0].ID})
	// A failed restore emits nothing.
	if _, err := h.p.Restore(ctx, "sp", "doc", "no-such-version"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Restore(unknown): %v", err)
	}
	h.none(t)
	// A provider that keeps nothing cannot restore.
	plain := setup(t, task.FormatJSON)
	if _, err := plain.p.Versions(ctx, "sp", "doc"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Versions on a provider without recovery: %v, want errors.ErrUnsupported", err)
	}
	if _, err := plain.p.Restore(ctx, "sp", "doc", ""); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Restore on a provider without recovery: %v, want errors.ErrUnsupported", err)
	}
}

// A space is audited as created only by the writer that created it: two
// audited providers (two workers) on one store creating the same space,
// and a later create of the existing space, queue one CREATE_SPACE.
func TestSpaceCreationAuditedOnce(t *testing.T) {
	dir := t.TempDir()
	var hs []*harness
	for range 2 {
		fs, err := fsstore.New(dir) // each worker opens the store itself
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, setupOn(t, fs, task.FormatJSON))
	}
	ctx := context.Background()
	for _, h := range hs {
		if err := h.p.CreateSpace(ctx, "photos"); err != nil {
			t.Fatal(err)
		}
		if err := h.p.CreateSpace(ctx, "photos"); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, h := range hs {
		for _, tk := range h.next(t) {
			if tk.Get("action") == "CREATE_SPACE" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("%d CREATE_SPACE tasks queued for one space, want 1", n)
	}
	sc, ok := any(hs[0].p).(storage.SpaceCreator)
	if !ok {
		t.Fatal("the audited provider hides its store's SpaceCreator")
	}
	if created, err := sc.CreateSpaceIfAbsent(ctx, "photos"); created || err != nil {
		t.Errorf("CreateSpaceIfAbsent(existing) = %v, %v", created, err)
	}
}
