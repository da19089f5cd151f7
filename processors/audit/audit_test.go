package audit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog/memauditlog"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
)

var t0 = time.Date(2024, 3, 5, 14, 7, 9, 123_000_000, time.UTC)

type fixture struct {
	p        *audit.Processor
	log      *memauditlog.Log
	index    *countingIndex
	dups     *memqueue.Queue
	notifier *recordingNotifier
	prov     *fakeProvider
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		log:      memauditlog.New(),
		index:    &countingIndex{Index: memcontentindex.New()},
		dups:     memqueue.New("dup-high", memqueue.Config{}),
		notifier: &recordingNotifier{},
		prov:     &fakeProvider{items: map[string]*storage.Info{}},
	}
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[{"id":"acme","status":"active","stores":[
	 {"id":"1","primary":true,"kind":"s3","bucket":"acme-1","prefix":"m/","region":"us-east-1"},
	 {"id":"2","kind":"s3","bucket":"acme-2","region":"us-east-1"},
	 {"id":"3","kind":"s3","bucket":"acme-3","region":"us-east-1"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	f.p, err = audit.New(audit.Config{
		Log: f.log, Index: f.index, DupHigh: f.dups,
		Policies: policies{"acme": mustPolicy(t, oneToTwoAndThree)},
		Notifier: f.notifier, Logger: testLogger(t),
		Resolver: s3event.RegistryResolver{Registry: reg},
		Stores:   f.opener(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// opener opens f.prov for every store.
func (f *fixture) opener() openerFunc {
	return func(ctx context.Context, account, store string) (storage.Provider, error) { return f.prov, nil }
}

type openerFunc func(ctx context.Context, account, storeID string) (storage.Provider, error)

func (o openerFunc) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	return o(ctx, account, storeID)
}

// fakeProvider answers Head from a map keyed "space/content".
type fakeProvider struct {
	storage.Provider
	items  map[string]*storage.Info
	spaces map[string]map[string]string
}

func (p *fakeProvider) Head(_ context.Context, space, id string) (*storage.Info, error) {
	if i, ok := p.items[space+"/"+id]; ok {
		return i, nil
	}
	return nil, storage.ErrNotFound
}

func size(n int64) *int64 { return &n }

// put writes an item into the fake store (every store of the fixture) at
// at, as a write's AUDIT task finds it: a content write of an item that is
// not in its store is history only (neither indexed nor duplicated).
func (f *fixture) put(content string, at time.Time, checksum string) {
	f.prov.items["photos/"+content] = &storage.Info{ContentID: content, Checksum: checksum, Size: 1, MimeType: "text/plain", Modified: at}
}

func add(content string, at time.Time, checksum string) *task.Task {
	return task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: content, Action: task.ActionAddContent,
		UserID: "bob", DateTime: at, ContentChecksum: checksum, ContentMimetype: "text/plain", ContentSize: size(1),
		ContentProperties: map[string]string{"creator": "bob"}}.Task()
}

func (f *fixture) handle(t *testing.T, tk *task.Task) {
	t.Helper()
	if err := f.p.Handle(context.Background(), tk); err != nil {
		t.Fatalf("Handle(%v): %v", tk, err)
	}
}

func (f *fixture) row(t *testing.T, content string) *contentindex.Entry {
	t.Helper()
	e, err := f.index.Get(context.Background(), contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: content})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAddContentAllSteps(t *testing.T) {
	f := setup(t)
	f.put("a/b.txt", t0, "c1")
	f.handle(t, add("a/b.txt", t0, "c1"))
	got, err := f.log.Latest(context.Background(), "acme", "1", "photos", "a/b.txt")
	if err != nil || got.Checksum != "c1" || got.UserID != "bob" {
		t.Fatalf("audit entry = %+v, %v", got, err)
	}
	if r := f.row(t, "a/b.txt"); r.Checksum != "c1" || r.Deleted || r.Properties["creator"] != "bob" || !r.Modified.Equal(t0) {
		t.Fatalf("index row = %+v", r)
	}
	dups := dupsOf(t, drain(t, f.dups))
	if len(dups) != 2 {
		t.Fatalf("%d DUP tasks, want 2", len(dups))
	}
	dests := map[string]bool{}
	for _, d := range dups {
		if d.Account != "acme" || d.StoreID != "1" || d.SpaceID != "photos" || d.ContentID != "a/b.txt" {
			t.Errorf("DUP = %+v", d)
		}
		dests[d.DestStoreID] = true
	}
	if !dests["2"] || !dests["3"] {
		t.Errorf("DUP destinations = %v", dests)
	}
	// A write to a store that is not a policy source duplicates nothing.
	f.put("x", t0, "c")
	tk := add("x", t0, "c")
	tk.Set(task.KeyStoreID, "2")
	f.handle(t, tk)
	if n := len(drain(t, f.dups)); n != 0 {
		t.Fatalf("write to store 2 sent %d DUP tasks", n)
	}
}

func TestRedeliveryOnce(t *testing.T) {
	f := setup(t)
	f.put("a", t0, "c1")
	tk := add("a", t0, "c1")
	f.handle(t, tk)
	f.handle(t, tk.Clone())
	if f.log.Len() != 1 {
		t.Fatalf("%d audit entries, want 1", f.log.Len())
	}
	if f.index.Applied() != 1 {
		t.Fatalf("%d index updates, want 1", f.index.Applied())
	}
}

func TestOlderEventChangesNothing(t *testing.T) {
	f := setup(t)
	f.put("a", t0.Add(time.Minute), "new")
	f.handle(t, add("a", t0.Add(time.Minute), "new"))
	f.handle(t, add("a", t0, "old"))
	if r := f.row(t, "a"); r.Checksum != "new" {
		t.Fatalf("index checksum = %q, want new", r.Checksum)
	}
	// The older event is still in the audit log (it happened).
	if f.log.Len() != 2 {
		t.Fatalf("%d audit entries, want 2", f.log.Len())
	}
}

func TestDeletes(t *testing.T) {
	f := setup(t)
	for _, c := range []string{"a", "b", "c"} {
		f.put(c, t0, "x")
		f.handle(t, add(c, t0, "x"))
	}
	drain(t, f.dups)
	delete(f.prov.items, "photos/a")
	del := task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", Action: task.ActionDeleteContent, DateTime: t0.Add(time.Second)}.Task()
	f.handle(t, del)
	if !f.row(t, "a").Deleted || f.row(t, "b").Deleted {
		t.Fatal("DELETE_CONTENT did not mark exactly its item deleted")
	}
	clear(f.prov.items) // the space is gone, and its items with it
	sp := task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", Action: task.ActionDeleteSpace, DateTime: t0.Add(2 * time.Second)}.Task()
	f.handle(t, sp)
	for _, c := range []string{"a", "b", "c"} {
		if !f.row(t, c).Deleted {
			t.Errorf("%s not deleted after DELETE_SPACE", c)
		}
	}
	dups := dupsOf(t, drain(t, f.dups))
	if len(dups) != 4 {
		t.Fatalf("%d DUP tasks, want 4", len(dups))
	}
	for _, d := range dups[2:] {
		if d.ContentID != "" {
			t.Errorf("space-level DUP has content ID %q", d.ContentID)
		}
	}
}

func TestCreateSpaceNotifies(t *testing.T) {
	f := setup(t)
	f.prov.spaces = map[string]map[string]string{"new": {}}
	f.handle(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "new", Action: task.ActionCreateSpace, DateTime: t0}.Task())
	if len(f.notifier.spaces) != 1 || f.notifier.spaces[0] != "new" {
		t.Fatalf("notified %v", f.notifier.spaces)
	}
	if n := len(drain(t, f.dups)); n != 2 {
		t.Fatalf("CREATE_SPACE sent %d DUP tasks, want 2", n)
	}
}

func TestNoPolicyNoDups(t *testing.T) {
	f := setup(t)
	f.put("a", t0, "c")
	tk := add("a", t0, "c")
	tk.Set(task.KeyAccount, "nopolicy")
	f.handle(t, tk)
	if n := len(drain(t, f.dups)); n != 0 {
		t.Fatalf("%d DUP tasks for an account without a policy", n)
	}
}

func TestPermanentErrors(t *testing.T) {
	f := setup(t)
	bad := task.New(task.TypeAudit, map[string]string{"account": "acme"})
	if err := f.p.Handle(context.Background(), bad); !processors.IsPermanent(err) {
		t.Fatalf("malformed task: err = %v, want permanent", err)
	}
	big := add("big", t0, "c")
	big.Set(task.KeyContentProperties, `{"x":"`+strings.Repeat("y", auditlog.MaxItemSize)+`"}`)
	if err := f.p.Handle(context.Background(), big); !processors.IsPermanent(err) || !errors.Is(err, auditlog.ErrTooLarge) {
		t.Fatalf("too large: err = %v, want permanent ErrTooLarge", err)
	}
}

// failingQueue fails sends, to show a retry repeats every step.
type failingQueue struct {
	*memqueue.Queue
	fail bool
}

func (q *failingQueue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	if q.fail {
		return errors.New("injected send failure")
	}
	return q.Queue.Send(ctx, entries...)
}

func TestRetryAfterSendFailure(t *testing.T) {
	f := setup(t)
	fq := &failingQueue{Queue: f.dups, fail: true}
	p, err := audit.New(audit.Config{Log: f.log, Index: f.index, DupHigh: fq, Policies: policies{"acme": mustPolicy(t, oneToTwoAndThree)}, Logger: testLogger(t),
		Stores: f.opener()})
	if err != nil {
		t.Fatal(err)
	}
	f.put("a", t0, "c")
	tk := add("a", t0, "c")
	if err := p.Handle(context.Background(), tk); err == nil || processors.IsPermanent(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	fq.fail = false
	if err := p.Handle(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	if f.log.Len() != 1 || len(drain(t, f.dups)) != 2 {
		t.Fatal("retry did not complete the task exactly once")
	}
}

func TestDuraCloudPropertiesMessages(t *testing.T) {
	files, err := filepath.Glob("../../testdata/messages/duracloud-*.properties")
	if err != nil || len(files) == 0 {
		t.Fatalf("no DuraCloud messages: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f := setup(t)
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tk, err := task.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			a, err := task.AuditFrom(tk)
			if err != nil {
				t.Fatal(err)
			}
			if a.Action.ContentAction() && a.Action != task.ActionDeleteContent {
				// The write's item is in its store (a deleted one is gone).
				f.prov.items[a.SpaceID+"/"+a.ContentID] = &storage.Info{ContentID: a.ContentID, Checksum: a.ContentChecksum, Modified: a.DateTime}
			}
			f.p, _ = audit.New(audit.Config{Log: f.log, Index: f.index, DupHigh: f.dups,
				Policies: policies{a.Account: mustPolicy(t, `{"defaultPolicies":[{"srcStoreId":"`+a.StoreID+`","destStoreId":"9"}]}`)},
				Logger:   testLogger(t), Stores: f.opener()})
			f.handle(t, tk)
			got, err := f.log.Latest(context.Background(), a.Account, a.StoreID, a.SpaceID, a.ContentID)
			if err != nil || got.Action != a.Action || got.Checksum != a.ContentChecksum || len(got.Properties) != len(a.ContentProperties) {
				t.Fatalf("entry = %+v, %v; task %+v", got, err, a)
			}
			if a.Action.ContentAction() {
				r, err := f.index.Get(context.Background(), contentindex.Item{Account: a.Account, StoreID: a.StoreID, SpaceID: a.SpaceID, ContentID: a.ContentID})
				if err != nil || r.Checksum != a.ContentChecksum {
					t.Fatalf("index row = %+v, %v", r, err)
				}
			}
			if a.Action == task.ActionSetSpaceACLs && len(got.SpaceACLs) == 0 {
				t.Fatalf("space ACLs lost: %+v", got)
			}
			dups := dupsOf(t, drain(t, f.dups))
			if len(dups) != 1 || dups[0].DestStoreID != "9" {
				t.Fatalf("DUP tasks = %+v", dups)
			}
		})
	}
}

func s3Body(bucket, key, event string, at time.Time) string {
	return `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"` + event + `","eventTime":"` +
		at.Format(time.RFC3339Nano) + `","s3":{"bucket":{"name":"` + bucket + `"},"object":{"key":"` + key + `","size":1}}}]}`
}

func decode(t *testing.T, body string) *task.Task {
	t.Helper()
	tk, err := task.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestS3Events(t *testing.T) {
	f := setup(t)
	f.prov.items["photos/dir/a b.txt"] = &storage.Info{ContentID: "dir/a b.txt", ProviderChecksum: "md5:0cc175b9c0f1b6a831c399e269772661",
		Size: 1, MimeType: "text/plain", Properties: map[string]string{"k": "v"}}
	created := s3Body("acme-1", "m/photos/dir/a+b.txt", "ObjectCreated:Put", t0)
	f.handle(t, decode(t, created))
	got, err := f.log.Latest(context.Background(), "acme", "1", "photos", "dir/a b.txt")
	if err != nil || got.Action != task.ActionAddContent || got.Checksum != "0cc175b9c0f1b6a831c399e269772661" || got.Properties["k"] != "v" {
		t.Fatalf("entry = %+v, %v", got, err)
	}
	if r := f.row(t, "dir/a b.txt"); r.Checksum != got.Checksum || *r.Size != 1 {
		t.Fatalf("index row = %+v", r)
	}
	if n := len(drain(t, f.dups)); n != 2 {
		t.Fatalf("%d DUP tasks, want 2", n)
	}
	// A redelivered S3 event is not an echo: it runs every step again
	// (the audit entry is stored once).
	f.handle(t, decode(t, created))
	if f.log.Len() != 1 || len(drain(t, f.dups)) != 2 {
		t.Fatalf("redelivery: %d entries (want 1), DUPs not re-sent", f.log.Len())
	}

	// Space marker, reserved key and an object gone since: ignored.
	for _, key := range []string{"m/photos", "m/.mill-tmp/x", "m/photos/gone"} {
		f.handle(t, decode(t, s3Body("acme-1", key, "ObjectCreated:Put", t0)))
	}
	if f.log.Len() != 1 || len(drain(t, f.dups)) != 0 {
		t.Fatal("ignored keys were audited")
	}

	// Unknown bucket: dead letter with a clear message.
	err = f.p.Handle(context.Background(), decode(t, s3Body("nobody", "s/c", "ObjectCreated:Put", t0)))
	if !processors.IsPermanent(err) || !strings.Contains(err.Error(), `no store is registered for bucket "nobody"`) {
		t.Fatalf("unknown bucket: %v", err)
	}

	// A removal the store contradicts (the object is there, written before
	// the event): not acted on, a permanent error naming the rule.
	removed := s3Body("acme-1", "m/photos/dir/a+b.txt", "ObjectRemoved:Delete", t0.Add(time.Minute))
	err = f.p.Handle(context.Background(), decode(t, removed))
	if !processors.IsPermanent(err) || !errors.Is(err, s3event.ErrNotConfirmed) || !strings.Contains(err.Error(), "s3event: not confirmed by HEAD") {
		t.Fatalf("removal of a live object: %v; want a permanent ErrNotConfirmed", err)
	}
	if f.row(t, "dir/a b.txt").Deleted || f.log.Len() != 1 {
		t.Fatal("an unconfirmed ObjectRemoved was acted on")
	}

	// Removal, confirmed.
	delete(f.prov.items, "photos/dir/a b.txt")
	f.handle(t, decode(t, removed))
	if !f.row(t, "dir/a b.txt").Deleted {
		t.Fatal("ObjectRemoved did not mark the item deleted")
	}
}

// TestS3EventTimesBounded: an event time in the future is taken as now, so
// a forged event cannot pin the content index row ahead of the real
// changes that follow.
func TestS3EventTimesBounded(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC()
	f.prov.items["photos/a"] = &storage.Info{ContentID: "a", Checksum: "c1", Size: 1}
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/a", "ObjectCreated:Put", now.Add(24*time.Hour*365))))
	if r := f.row(t, "a"); r.Modified.After(time.Now()) {
		t.Fatalf("row modified %v: in the future", r.Modified)
	}
	delete(f.prov.items, "photos/a")
	f.handle(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", Action: task.ActionDeleteContent,
		DateTime: time.Now().Add(time.Second)}.Task())
	if !f.row(t, "a").Deleted {
		t.Fatal("a real removal after a forged future creation did not tombstone the row")
	}
}

func TestS3EchoOfMillWrite(t *testing.T) {
	f := setup(t)
	f.prov.items["photos/a"] = &storage.Info{ContentID: "a", Checksum: "c1", Size: 1, MimeType: "text/plain"}
	// Mill's own audited write, then the bucket's notification of it.
	f.handle(t, add("a", t0, "c1"))
	drain(t, f.dups)
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/a", "ObjectCreated:Put", t0.Add(300*time.Millisecond))))
	if f.log.Len() != 1 || len(drain(t, f.dups)) != 0 {
		t.Fatalf("echo audited again: %d entries", f.log.Len())
	}
	// Different content, or long after: audited.
	f.prov.items["photos/a"] = &storage.Info{ContentID: "a", Checksum: "c2", Size: 1}
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/a", "ObjectCreated:Put", t0.Add(time.Second))))
	if f.log.Len() != 2 {
		t.Fatalf("new content not audited: %d entries", f.log.Len())
	}
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/a", "ObjectCreated:Put", t0.Add(time.Hour))))
	if f.log.Len() != 3 {
		t.Fatalf("write after the echo window not audited: %d entries", f.log.Len())
	}
	// Deletes: Mill's DELETE_CONTENT, then its echo.
	delete(f.prov.items, "photos/a")
	f.handle(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a", Action: task.ActionDeleteContent, DateTime: t0.Add(2 * time.Hour)}.Task())
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/a", "ObjectRemoved:Delete", t0.Add(2*time.Hour+time.Second))))
	if f.log.Len() != 4 {
		t.Fatalf("delete echo audited again: %d entries", f.log.Len())
	}
}

func TestS3TestEventIsNoop(t *testing.T) {
	tk := decode(t, `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-03-05T14:07:09.123Z","Bucket":"acme-1"}`)
	if tk.Type != task.TypeNoop {
		t.Fatalf("type %s", tk.Type)
	}
}

// The audit path follows the policies in force: an account with a policy
// file that is not listed in duplication-accounts.json is audited and
// indexed, but gets no DUP tasks; listing it turns duplication on.
func TestUnlistedAccountIsNotDuplicated(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, policy.FileName("acme")), []byte(oneToTwoAndThree), 0o644); err != nil {
		t.Fatal(err)
	}
	dups := memqueue.New("dup-high", memqueue.Config{})
	log := memauditlog.New()
	f := setup(t)
	f.put("a", t0, "c1")
	f.put("b", t0, "c2")
	p, err := audit.New(audit.Config{Log: log, Index: memcontentindex.New(), DupHigh: dups, Policies: policy.NewDir(dir), Logger: testLogger(t),
		Stores: f.opener()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(context.Background(), add("a", t0, "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Latest(context.Background(), "acme", "1", "photos", "a"); err != nil {
		t.Fatalf("not audited: %v", err)
	}
	if got := drain(t, dups); len(got) != 0 {
		t.Fatalf("%d DUP tasks for an account not in %s", len(got), policy.AccountsFile)
	}
	if err := os.WriteFile(filepath.Join(dir, policy.AccountsFile), []byte(`["acme"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(context.Background(), add("b", t0, "c2")); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, dups); len(got) != 2 {
		t.Fatalf("%d DUP tasks once listed, want 2", len(got))
	}
}

// SpaceACLs answers from the spaces map: ErrNotFound for a space not in it.
func (p *fakeProvider) SpaceACLs(_ context.Context, space string) (map[string]string, error) {
	if acls, ok := p.spaces[space]; ok {
		return acls, nil
	}
	return nil, storage.ErrNotFound
}

// An AUDIT task is a claim about a store, and anyone who can send to the
// audit queue can make one: what it says was deleted is checked against
// the store before it is recorded or duplicated (a forged DELETE_CONTENT or
// DELETE_SPACE would tombstone live rows, and a later DUP of an item lost
// from the source would then delete its only other copy), a checksum the
// store contradicts is refused, and a time in the future is taken as now
// (it would pin the row).
func TestForgedAuditTasksAreRefused(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.prov.items["photos/live"] = &storage.Info{ContentID: "live", Checksum: "c1", Modified: t0}
	f.prov.spaces = map[string]map[string]string{"photos": {}}
	f.handle(t, add("live", t0.Add(time.Second), "c1"))
	drain(t, f.dups)
	entries := f.log.Len()

	refused := []struct {
		name string
		tk   *task.Task
		has  string
	}{
		{"DELETE_CONTENT of an item that exists", task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "live",
			Action: task.ActionDeleteContent, DateTime: t0.Add(time.Minute)}.Task(), "the item exists"},
		{"DELETE_SPACE of a space that exists", task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos",
			Action: task.ActionDeleteSpace, DateTime: t0.Add(time.Minute)}.Task(), "the space exists"},
		{"ADD_CONTENT with a checksum the store contradicts", add("live", t0.Add(time.Minute), "evil"), `checksum "evil"`},
	}
	for _, c := range refused {
		err := f.p.Handle(ctx, c.tk)
		if !processors.IsPermanent(err) || !errors.Is(err, audit.ErrNotConfirmed) || !strings.Contains(err.Error(), c.has) {
			t.Errorf("%s: %v, want a permanent audit.ErrNotConfirmed naming %q", c.name, err, c.has)
		}
	}
	if r := f.row(t, "live"); r.Deleted || r.Checksum != "c1" {
		t.Errorf("the live item's row after the forged tasks: %+v", r)
	}
	if n := len(drain(t, f.dups)); n != 0 {
		t.Errorf("the forged tasks queued %d DUP tasks", n)
	}
	if n := f.log.Len(); n != entries {
		t.Errorf("the forged tasks wrote %d audit entries", n-entries)
	}

	// A delete older than the item's last write (deleted, then written
	// again), or in the same second, is history, not a contradiction:
	// recorded in the audit log, but neither indexed nor duplicated — the
	// item exists. (Nor can a forger, by choosing an old time, tombstone
	// an item the index has no newer row for.)
	f.prov.items["photos/unindexed"] = &storage.Info{ContentID: "unindexed", Checksum: "c3", Modified: t0.Truncate(time.Second)}
	for _, tk := range []*task.Task{
		task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "live", Action: task.ActionDeleteContent, DateTime: t0.Add(-time.Minute)}.Task(),
		task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "unindexed", Action: task.ActionDeleteContent, DateTime: t0.Add(-time.Minute)}.Task(),
		task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "unindexed", Action: task.ActionDeleteContent, DateTime: t0}.Task(),
	} {
		f.handle(t, tk)
	}
	if r := f.row(t, "live"); r.Deleted {
		t.Errorf("an older delete tombstoned the row: %+v", r)
	}
	if _, err := f.index.Get(ctx, contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "unindexed"}); !errors.Is(err, contentindex.ErrNotFound) {
		t.Errorf("older events indexed an item written since: %v", err)
	}
	if n := len(drain(t, f.dups)); n != 0 {
		t.Errorf("older events queued %d DUP tasks", n)
	}
	if n := f.log.Len(); n != entries+3 {
		t.Errorf("%d audit entries for the three older deletes, want 3", n-entries)
	}
	// A write in the same second as the item's (a store keeping whole
	// seconds, the writer's task right after) is the write itself: indexed
	// and duplicated.
	f.handle(t, add("unindexed", t0, "c3"))
	if r := f.row(t, "unindexed"); r.Checksum != "c3" || r.Deleted {
		t.Errorf("the write's row: %+v", r)
	}
	if n := len(drain(t, f.dups)); n != 2 {
		t.Errorf("the write queued %d DUP tasks, want 2", n)
	}

	// A time in the future is taken as now.
	future := time.Now().Add(365 * 24 * time.Hour)
	f.put("gone", t0, "c2")
	f.handle(t, add("gone", future, "c2"))
	if r := f.row(t, "gone"); r.Modified.After(time.Now()) {
		t.Errorf("row time %s is in the future", r.Modified)
	}
	delete(f.prov.items, "photos/gone")
	f.handle(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "gone",
		Action: task.ActionDeleteContent, DateTime: time.Now().Add(time.Second)}.Task())
	if r := f.row(t, "gone"); !r.Deleted {
		t.Errorf("a forged future time pinned the row against the real delete: %+v", r)
	}
}

// TestReplacedCopyChecksum: a copy whose bytes were replaced with its
// recorded MD5 ("mill-md5") kept has the provider's digest (the ETag) as
// its checksum, by the rule the bit check and duplication use too
// (storage.ChecksumOf). A re-sync from what storage holds is confirmed; a
// task repeating the stale recorded MD5 is refused; an S3 event records
// the digest, never the stale claim.
func TestReplacedCopyChecksum(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const kept, replaced = "0cc175b9c0f1b6a831c399e269772661", "92eb5ffee6ae2fec3ad71c777531578f"
	f.prov.items["photos/r"] = &storage.Info{ContentID: "r", Checksum: kept, ProviderChecksum: "md5:" + replaced,
		Size: 1, MimeType: "text/plain", Modified: t0}
	err := f.p.Handle(ctx, add("r", t0.Add(time.Minute), kept))
	if !processors.IsPermanent(err) || !errors.Is(err, audit.ErrNotConfirmed) || !strings.Contains(err.Error(), replaced) {
		t.Errorf("ADD_CONTENT with the stale recorded MD5: %v, want ErrNotConfirmed naming the copy's MD5 %s", err, replaced)
	}
	f.handle(t, add("r", t0.Add(2*time.Minute), replaced))
	if r := f.row(t, "r"); r.Checksum != replaced {
		t.Errorf("index row after the re-sync: %+v", r)
	}
	f.handle(t, decode(t, s3Body("acme-1", "m/photos/r", "ObjectCreated:Put", t0.Add(time.Hour))))
	got, err := f.log.Latest(ctx, "acme", "1", "photos", "r")
	if err != nil || got.Checksum != replaced {
		t.Errorf("S3 event entry: %+v, %v; want checksum %s (the ETag), not the kept %s", got, err, replaced, kept)
	}
}
