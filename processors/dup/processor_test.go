package dup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/dup"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
)

const (
	acct  = "acme"
	space = "photos"
)

// opener serves providers by store id.
type opener map[string]storage.Provider

func (o opener) Open(_ context.Context, account, storeID string) (storage.Provider, error) {
	if p, ok := o[storeID]; ok && account == acct {
		return p, nil
	}
	return nil, fmt.Errorf("unknown store %s/%s", account, storeID)
}

type env struct {
	src, dst *fsstore.Store
	audit    *memqueue.Queue
	live     map[string]bool // content ids the source index lists as live
	proc     *dup.Processor
}

func newFS(t *testing.T) *fsstore.Store {
	t.Helper()
	s, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testLogger(t *testing.T) *slog.Logger {
	return slogtest.New(t, slog.LevelDebug)
}

// setup returns fs source "1" and destination "2" (either may be replaced
// through wrap) and a processor over them.
func setup(t *testing.T, wrapSrc, wrapDst func(storage.Provider) storage.Provider, mod func(*dup.Config)) *env {
	t.Helper()
	e := &env{src: newFS(t), dst: newFS(t), audit: memqueue.New("audit", memqueue.Config{}), live: map[string]bool{}}
	var src, dst storage.Provider = e.src, e.dst
	if wrapSrc != nil {
		src = wrapSrc(src)
	}
	if wrapDst != nil {
		dst = wrapDst(dst)
	}
	cfg := dup.Config{
		Opener: opener{"1": src, "2": dst},
		Audit:  dup.AuditTo(e.audit, task.FormatJSON, nil),
		Live: dup.LiveCheckerFunc(func(_ context.Context, a, s, sp, c string) (bool, error) {
			if a != acct || s != "1" || sp != space {
				return false, fmt.Errorf("index asked about %s/%s/%s", a, s, sp)
			}
			return e.live[c], nil
		}),
		Policies: allow(t, oneToTwo),
		Retry:    dup.Retry{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Millisecond},
		Logger:   testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := dup.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.proc = p
	return e
}

func put(t *testing.T, s storage.Provider, id, body string, props map[string]string) *storage.Info {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	info, err := s.Put(ctx, space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain", Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func dupTask(id string) task.Dup {
	return task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: id}
}

func read(t *testing.T, s storage.Provider, id string) (string, *storage.Info) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), space, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), info
}

// auditActions returns the action of every AUDIT task queued.
func (e *env) auditActions(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range e.audit.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Get(task.KeyStoreID) != "2" {
			t.Errorf("AUDIT for store %q, want only the destination 2", tk.Get(task.KeyStoreID))
		}
		out = append(out, tk.Get(task.KeyAction))
	}
	return out
}

func run(t *testing.T, e *env, d task.Dup) (dup.Action, error) {
	t.Helper()
	return e.proc.Process(context.Background(), d)
}

func TestCopyWhenOnlyAtSource(t *testing.T) {
	e := setup(t, nil, nil, nil)
	ctx := context.Background()
	put(t, e.src, "a/b.txt", "hello", map[string]string{"owner": "ann"})
	if err := e.src.SetSpaceACLs(ctx, space, map[string]string{"group-public": "READ"}); err != nil {
		t.Fatal(err)
	}
	a, err := run(t, e, dupTask("a/b.txt"))
	if err != nil || a != dup.CopyContent {
		t.Fatalf("Process = %v, %v; want copy", a, err)
	}
	body, info := read(t, e.dst, "a/b.txt")
	if body != "hello" || info.MimeType != "text/plain" || info.Properties["owner"] != "ann" {
		t.Errorf("destination has %q %+v", body, info)
	}
	// The destination space did not exist: it was created with the ACLs.
	acls, err := e.dst.SpaceACLs(ctx, space)
	if err != nil || acls["group-public"] != "READ" {
		t.Errorf("destination ACLs %v, %v", acls, err)
	}
	if got := strings.Join(e.auditActions(t), ","); got != "CREATE_SPACE,SET_SPACE_ACLS,ADD_CONTENT" {
		t.Errorf("audited %s", got)
	}
	// Running it again changes nothing.
	if a, err := run(t, e, dupTask("a/b.txt")); err != nil || a != dup.None {
		t.Errorf("second Process = %v, %v; want none", a, err)
	}
}

func TestCopyWhenChecksumsDiffer(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.src, "x", "new bytes", map[string]string{"k": "v"})
	put(t, e.dst, "x", "old bytes", map[string]string{"k": "v"})
	a, err := run(t, e, dupTask("x"))
	if err != nil || a != dup.CopyContent {
		t.Fatalf("Process = %v, %v; want copy", a, err)
	}
	if body, _ := read(t, e.dst, "x"); body != "new bytes" {
		t.Errorf("destination holds %q", body)
	}
}

func TestCopyPropertiesWhenOnlyUserPropertiesDiffer(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.src, "x", "same", map[string]string{"k": "new", "extra": "1"})
	before := put(t, e.dst, "x", "same", map[string]string{"k": "old"})
	a, err := run(t, e, dupTask("x"))
	if err != nil || a != dup.CopyProperties {
		t.Fatalf("Process = %v, %v; want copy-properties", a, err)
	}
	_, info := read(t, e.dst, "x")
	if !storage.PropertiesEqual(info.Properties, map[string]string{"k": "new", "extra": "1"}) {
		t.Errorf("destination properties %v", info.Properties)
	}
	if info.Checksum != before.Checksum {
		t.Errorf("content changed")
	}
	if got := strings.Join(e.auditActions(t), ","); got != "SET_CONTENT_PROPERTIES" {
		t.Errorf("audited %s", got)
	}
}

func TestNothingWhenOnlySystemPropertiesDiffer(t *testing.T) {
	e := setup(t, nil, nil, nil)
	ctx := context.Background()
	put(t, e.src, "x", "same", map[string]string{"k": "v", storage.PropChecksum: "ignored"})
	put(t, e.dst, "x", "same", map[string]string{"k": "v"})
	if err := e.dst.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.Put(ctx, space, "x", strings.NewReader("same"), storage.PutOptions{Size: 4, MimeType: "text/plain", Properties: map[string]string{"k": "v", storage.PropModified: "2001-01-01T00:00:00Z"}}); err != nil {
		t.Fatal(err)
	}
	if a, err := run(t, e, dupTask("x")); err != nil || a != dup.None {
		t.Fatalf("Process = %v, %v; want none", a, err)
	}
	if n := e.audit.Len(); n != 0 {
		t.Errorf("%d AUDIT tasks for no write", n)
	}
}

func TestDeleteWhenOnlyAtDestination(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.src, "other", "o", nil) // the source space exists
	put(t, e.dst, "gone", "g", nil)
	a, err := run(t, e, dupTask("gone"))
	if err != nil || a != dup.DeleteContent {
		t.Fatalf("Process = %v, %v; want delete", a, err)
	}
	if _, err := e.dst.Head(context.Background(), space, "gone"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("destination item still there: %v", err)
	}
	if got := strings.Join(e.auditActions(t), ","); got != "DELETE_CONTENT" {
		t.Errorf("audited %s", got)
	}
}

func TestRefuseDeleteWhileSourceIndexListsItem(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.dst, "lost", "precious", nil)
	e.live["lost"] = true
	_, err := run(t, e, dupTask("lost"))
	if !errors.Is(err, dup.ErrMissingFromSource) {
		t.Fatalf("err = %v; want ErrMissingFromSource", err)
	}
	if processors.IsPermanent(err) {
		t.Error("missing-from-source is retried before it is dead-lettered, not permanent")
	}
	if body, _ := read(t, e.dst, "lost"); body != "precious" {
		t.Errorf("destination item changed: %q", body)
	}
}

func TestNothingWhenAbsentFromBoth(t *testing.T) {
	e := setup(t, nil, nil, nil)
	if a, err := run(t, e, dupTask("nowhere")); err != nil || a != dup.None {
		t.Fatalf("Process = %v, %v; want none", a, err)
	}
}

func TestSpaceTasks(t *testing.T) {
	ctx := context.Background()
	spaceTask := task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space}

	t.Run("create with ACLs", func(t *testing.T) {
		e := setup(t, nil, nil, nil)
		if err := e.src.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		if err := e.src.SetSpaceACLs(ctx, space, map[string]string{"user-ann": "WRITE"}); err != nil {
			t.Fatal(err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.CreateSpace {
			t.Fatalf("Process = %v, %v", a, err)
		}
		if acls, err := e.dst.SpaceACLs(ctx, space); err != nil || acls["user-ann"] != "WRITE" {
			t.Errorf("ACLs %v, %v", acls, err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.None {
			t.Errorf("again: %v, %v", a, err)
		}
		if err := e.src.SetSpaceACLs(ctx, space, map[string]string{"user-bob": "READ"}); err != nil {
			t.Fatal(err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.SetSpaceACLs {
			t.Errorf("changed ACLs: %v, %v", a, err)
		}
		if acls, _ := e.dst.SpaceACLs(ctx, space); len(acls) != 1 || acls["user-bob"] != "READ" {
			t.Errorf("ACLs %v", acls)
		}
	})
	t.Run("delete empty destination", func(t *testing.T) {
		l := memauditlog.New() // the audit log shows Mill's duplication created it
		e := setup(t, nil, nil, func(c *dup.Config) { c.History = l })
		if err := e.dst.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		logged(t, l, "", task.ActionCreateSpace, dup.UserID, time.Now())
		if a, err := run(t, e, spaceTask); err != nil || a != dup.DeleteSpace {
			t.Fatalf("Process = %v, %v", a, err)
		}
		if _, err := e.dst.SpaceACLs(ctx, space); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("destination space still there: %v", err)
		}
		if got := strings.Join(e.auditActions(t), ","); got != "DELETE_SPACE" {
			t.Errorf("audited %s", got)
		}
	})
	t.Run("keep non-empty destination", func(t *testing.T) {
		e := setup(t, nil, nil, nil)
		put(t, e.dst, "kept", "k", nil)
		if a, err := run(t, e, spaceTask); err != nil || a != dup.KeepNonEmptySpace {
			t.Fatalf("Process = %v, %v", a, err)
		}
		if _, err := e.dst.Head(ctx, space, "kept"); err != nil {
			t.Errorf("destination content touched: %v", err)
		}
	})
	t.Run("gone from both", func(t *testing.T) {
		e := setup(t, nil, nil, nil)
		if a, err := run(t, e, spaceTask); err != nil || a != dup.None {
			t.Fatalf("Process = %v, %v", a, err)
		}
	})
}

// sourGet serves bytes that do not match the item's recorded checksum.
type sourGet struct{ storage.Provider }

func (s sourGet) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	rc, info, err := s.Provider.Get(ctx, space, id)
	if err != nil {
		return nil, nil, err
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	b[0] ^= 0xff
	return io.NopCloser(bytes.NewReader(b)), info, nil
}

func TestSourCopySourceIsRefusedAndNothingCommitted(t *testing.T) {
	e := setup(t, func(p storage.Provider) storage.Provider { return sourGet{p} }, nil, nil)
	put(t, e.src, "sour", "these bytes went sour", nil)
	put(t, e.dst, "other", "o", nil)
	_, err := run(t, e, dupTask("sour"))
	if !errors.Is(err, dup.ErrSourceCorrupt) || !errors.Is(err, storage.ErrChecksumMismatch) {
		t.Fatalf("err = %v; want ErrSourceCorrupt wrapping ErrChecksumMismatch", err)
	}
	if !processors.IsPermanent(err) {
		t.Error("a sour source is permanent: copying again reads the same bytes")
	}
	if _, err := e.dst.Head(context.Background(), space, "sour"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("something was committed at the destination: %v", err)
	}
	if ids, _, _ := e.dst.ListContent(context.Background(), space, "", 10); len(ids) != 1 {
		t.Errorf("destination holds %v", ids)
	}
	if n := e.audit.Len(); n != 0 {
		t.Errorf("%d AUDIT tasks for a refused copy", n)
	}
}

// lyingHead reports a wrong checksum for items written through it.
type lyingHead struct{ storage.Provider }

func (l lyingHead) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	info, err := l.Provider.Head(ctx, space, id)
	if err == nil {
		info.Checksum = strings.Repeat("0", 32)
	}
	return info, err
}

func TestDestinationReportingWrongChecksumAfterWrite(t *testing.T) {
	e := setup(t, nil, func(p storage.Provider) storage.Provider { return lyingHead{p} }, nil)
	put(t, e.src, "x", "payload", nil)
	_, err := run(t, e, dupTask("x"))
	if !errors.Is(err, dup.ErrDestinationChecksum) {
		t.Fatalf("err = %v; want ErrDestinationChecksum", err)
	}
	if processors.IsPermanent(err) {
		t.Error("a destination checksum mismatch is retried")
	}
}

// flaky fails the first n calls of Head with a transient error, and
// counts calls.
type flaky struct {
	storage.Provider
	fail  int32
	calls atomic.Int32
	err   error
}

func (f *flaky) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	if n := f.calls.Add(1); n <= f.fail {
		return nil, f.err
	}
	return f.Provider.Head(ctx, space, id)
}

func TestTransientErrorsRetryWithBackoffOnTheClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var fl *flaky
	e := setup(t, func(p storage.Provider) storage.Provider {
		fl = &flaky{Provider: p, fail: 2, err: errors.New("connection reset")}
		return fl
	}, nil, func(c *dup.Config) {
		c.Clock = clk
		c.Retry = dup.Retry{Attempts: 4, Base: time.Second, Max: 10 * time.Second}
	})
	put(t, e.src, "x", "payload", nil)
	done := make(chan error, 1)
	go func() { _, err := run(t, e, dupTask("x")); done <- err }()
	start := clk.Now()
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		if err := clk.BlockUntil(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if at, _ := clk.NextDeadline(); at.Sub(clk.Now()) != wait {
			t.Errorf("backoff %v, want %v", at.Sub(clk.Now()), wait)
		}
		clk.Advance(wait)
	}
	if err := <-done; err != nil {
		t.Fatalf("Process: %v", err)
	}
	if got := clk.Now().Sub(start); got != 3*time.Second {
		t.Errorf("waited %v", got)
	}
	// The source is read once (2 failures, then success); the copy itself
	// streams with Get.
	if n := fl.calls.Load(); n != 3 {
		t.Errorf("source Head called %d times, want 3", n)
	}
	if body, _ := read(t, e.dst, "x"); body != "payload" {
		t.Errorf("destination holds %q", body)
	}
}

func TestRetriesAreCappedAndNotFoundIsNotRetried(t *testing.T) {
	var fl *flaky
	e := setup(t, func(p storage.Provider) storage.Provider {
		fl = &flaky{Provider: p, fail: 100, err: errors.New("503 slow down")}
		return fl
	}, nil, nil)
	_, err := run(t, e, dupTask("x"))
	if err == nil || !strings.Contains(err.Error(), "slow down") {
		t.Fatalf("err = %v", err)
	}
	if n := fl.calls.Load(); n != 3 {
		t.Errorf("Head called %d times, want Retry.Attempts = 3", n)
	}

	e = setup(t, func(p storage.Provider) storage.Provider {
		fl = &flaky{Provider: p, fail: 100, err: fmt.Errorf("wrapped: %w", storage.ErrNotFound)}
		return fl
	}, nil, nil)
	if a, err := run(t, e, dupTask("x")); err != nil || a != dup.None {
		t.Fatalf("Process = %v, %v", a, err)
	}
	if n := fl.calls.Load(); n != 1 {
		t.Errorf("a not-found Head was called %d times, want 1", n)
	}
}

func TestCancelledContextStopsRetrying(t *testing.T) {
	clk := clock.NewFake(time.Now())
	e := setup(t, func(p storage.Provider) storage.Provider {
		return &flaky{Provider: p, fail: 100, err: errors.New("timeout")}
	}, nil, func(c *dup.Config) { c.Clock = clk; c.Retry = dup.Retry{Attempts: 10, Base: time.Hour, Max: time.Hour} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := e.proc.Process(ctx, dupTask("x")); done <- err }()
	if err := clk.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Process did not return after cancel")
	}
}

// writeSpy records every write method called on it.
type writeSpy struct {
	storage.Provider
	writes atomic.Int32
}

func (w *writeSpy) CreateSpace(ctx context.Context, s string) error {
	w.writes.Add(1)
	return w.Provider.CreateSpace(ctx, s)
}
func (w *writeSpy) DeleteSpace(ctx context.Context, s string) error {
	w.writes.Add(1)
	return w.Provider.DeleteSpace(ctx, s)
}
func (w *writeSpy) SetSpaceACLs(ctx context.Context, s string, a map[string]string) error {
	w.writes.Add(1)
	return w.Provider.SetSpaceACLs(ctx, s, a)
}
func (w *writeSpy) Put(ctx context.Context, s, id string, r io.Reader, o storage.PutOptions) (*storage.Info, error) {
	w.writes.Add(1)
	return w.Provider.Put(ctx, s, id, r, o)
}
func (w *writeSpy) SetProperties(ctx context.Context, s, id string, p map[string]string) error {
	w.writes.Add(1)
	return w.Provider.SetProperties(ctx, s, id, p)
}
func (w *writeSpy) Delete(ctx context.Context, s, id string) error {
	w.writes.Add(1)
	return w.Provider.Delete(ctx, s, id)
}

func TestSourceIsNeverWritten(t *testing.T) {
	var spy *writeSpy
	e := setup(t, func(p storage.Provider) storage.Provider { spy = &writeSpy{Provider: p}; return spy }, nil, nil)
	put(t, e.src, "copy", "c", map[string]string{"a": "1"})
	put(t, e.src, "props", "p", map[string]string{"a": "2"})
	put(t, e.dst, "props", "p", map[string]string{"a": "old"})
	put(t, e.dst, "delete", "d", nil)
	base := spy.writes.Load() // the fixture's own writes went straight to the store
	for _, id := range []string{"copy", "props", "delete", "none"} {
		if _, err := run(t, e, dupTask(id)); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if _, err := run(t, e, task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space}); err != nil {
		t.Fatal(err)
	}
	if n := spy.writes.Load() - base; n != 0 {
		t.Errorf("%d writes reached the source", n)
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	fs := newFS(t)
	ro := dup.NewReadOnly(fs)
	ctx := context.Background()
	errs := []error{
		ro.CreateSpace(ctx, "s"),
		ro.DeleteSpace(ctx, "s"),
		ro.SetSpaceACLs(ctx, "s", nil),
		ro.SetProperties(ctx, "s", "c", nil),
		ro.Delete(ctx, "s", "c"),
	}
	_, err := ro.Put(ctx, "s", "c", strings.NewReader("x"), storage.PutOptions{Size: 1})
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, dup.ErrReadOnly) {
			t.Errorf("write %d: %v, want ErrReadOnly", i, err)
		}
	}
	if spaces, _ := fs.ListSpaces(ctx); len(spaces) != 0 {
		t.Errorf("the store was written: %v", spaces)
	}
	if storage.Unwrap(ro) != storage.Provider(fs) {
		t.Error("Unwrap does not expose the store for server-side copies")
	}
}

// copier is a destination that copies server-side when allowed.
type copier struct {
	storage.Provider
	calls atomic.Int32
}

func (c *copier) ServerSideCopy(ctx context.Context, src storage.Provider, ss, sid, ds, did string) (*storage.Info, bool, error) {
	c.calls.Add(1)
	if _, ok := src.(*fsstore.Store); !ok {
		return nil, false, fmt.Errorf("copier got a %T source, want the unwrapped store", src)
	}
	info, err := storage.Copy(ctx, src, ss, sid, c.Provider, ds)
	return info, err == nil, err
}

func TestServerSideCopyUsedUnlessDisabled(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprint("disabled=", disable), func(t *testing.T) {
			var c *copier
			e := setup(t, nil, func(p storage.Provider) storage.Provider { c = &copier{Provider: p}; return c },
				func(cfg *dup.Config) {
					cfg.DisableServerSideCopy = disable
					cfg.Audit = func(p storage.Provider, _, _, _ string) (storage.Provider, error) { return p, nil }
				})
			put(t, e.src, "x", "payload", nil)
			if err := e.dst.CreateSpace(context.Background(), space); err != nil {
				t.Fatal(err)
			}
			if a, err := run(t, e, dupTask("x")); err != nil || a != dup.CopyContent {
				t.Fatalf("Process = %v, %v", a, err)
			}
			if want := map[bool]int32{false: 1, true: 0}[disable]; c.calls.Load() != want {
				t.Errorf("server-side copies %d, want %d", c.calls.Load(), want)
			}
			if body, _ := read(t, e.dst, "x"); body != "payload" {
				t.Errorf("destination holds %q", body)
			}
		})
	}
}

func TestHandleRejectsInvalidTasks(t *testing.T) {
	e := setup(t, nil, nil, nil)
	err := e.proc.Handle(context.Background(), task.New(task.TypeDup, map[string]string{task.KeyAccount: acct}))
	if !processors.IsPermanent(err) {
		t.Errorf("err = %v; want permanent", err)
	}
	err = e.proc.Handle(context.Background(), task.Dup{Account: acct, StoreID: "1", DestStoreID: "1", SpaceID: space}.Task())
	if !processors.IsPermanent(err) {
		t.Errorf("same store: err = %v; want permanent", err)
	}
	put(t, e.src, "x", "payload", nil)
	if err := e.proc.Handle(context.Background(), dupTask("x").Task()); err != nil {
		t.Errorf("Handle: %v", err)
	}
}

func TestConfigErrorsAtOnce(t *testing.T) {
	_, err := dup.New(dup.Config{Retry: dup.Retry{Attempts: -1}})
	for _, want := range []string{"Opener", "Audit", "Live", "Attempts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestFromIndex(t *testing.T) {
	ctx := context.Background()
	idx := memcontentindex.New()
	item := contentindex.Item{Account: acct, StoreID: "1", SpaceID: space, ContentID: "x"}
	now := time.Now()
	live := dup.FromIndex(idx)
	check := func(want bool) {
		t.Helper()
		got, err := live.IsLive(ctx, acct, "1", space, "x")
		if err != nil || got != want {
			t.Errorf("IsLive = %v, %v; want %v", got, err, want)
		}
	}
	check(false) // no row
	if _, err := idx.Upsert(ctx, contentindex.Entry{Item: item, Checksum: strings.Repeat("a", 32), Modified: now}); err != nil {
		t.Fatal(err)
	}
	check(true)
	if _, err := idx.MarkDeleted(ctx, item, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	check(false) // tombstone
}

// An ID a store refuses is refused again on every retry: the task is
// permanent at once (straight to the dead letter), the store is asked once,
// and the error keeps its reason even for a 10 KiB ID.
func TestInvalidContentIDIsPermanentAtOnce(t *testing.T) {
	long := strings.Repeat("d/", 5<<10)
	for _, tc := range []struct{ name, id, reason string }{
		{"dot-dot segment", "../x", `".." segment`},
		{"10 KiB ID", long, "content ID is 10240 bytes (limit 1024)"},
		{"empty segment", "a//b", "empty segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fl *flaky
			e := setup(t, func(p storage.Provider) storage.Provider {
				fl = &flaky{Provider: p}
				return fl
			}, nil, nil)
			err := e.proc.Handle(context.Background(), dupTask(tc.id).Task())
			if !processors.IsPermanent(err) || !errors.Is(err, storage.ErrInvalidID) {
				t.Fatalf("err = %v; want permanent ErrInvalidID", err)
			}
			if n := fl.calls.Load(); n > 1 {
				t.Errorf("source Head called %d times, want at most 1 (no retry)", n)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.reason) || len(msg) > 600 {
				t.Errorf("error (%d bytes) does not keep the reason %q short: %.300s", len(msg), tc.reason, msg)
			}
			if strings.Count(err.Error(), "permanent:") > 1 {
				t.Errorf("error marked permanent more than once: %.300s", err)
			}
		})
	}
}
