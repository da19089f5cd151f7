package derive_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
	"github.com/millfleet/mill/pkg/task"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

const (
	md5a = "0123456789abcdef0123456789abcdef"
	md5b = "fedcba9876543210fedcba9876543210"
)

type fixture struct {
	bits  *membitlog.Log
	audit *memauditlog.Log
	blobs blob.Store
	skey  string
	v     note.Verifier
	clk   *clock.Fake
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	skey, vkey, err := evidence.GenerateKey("mill.test/derive")
	if err != nil {
		t.Fatal(err)
	}
	v, err := evidence.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{bits: membitlog.New(nil), audit: memauditlog.New(), blobs: dirblob.New(t.TempDir(), nil), skey: skey, v: v,
		clk: clock.NewFake(t0.Add(24 * time.Hour))}
}

func (f *fixture) row(t *testing.T, run, id string, at time.Time, res bitlog.Result) bitlog.Row {
	t.Helper()
	r := bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id, Result: res,
		ContentChecksum: md5a, IndexChecksum: md5a, Method: bitlog.MethodRead, CheckedAt: at, Case: 1}
	if res == bitlog.ResultFailure {
		r.ContentChecksum, r.Case = md5b, 3
	}
	if err := f.bits.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// recheck records the SUCCESS of a re-check after the repair of a failed
// row's case (3): the one check that replaces the run's failure.
func (f *fixture) recheck(t *testing.T, run, id string, at time.Time) bitlog.Row {
	t.Helper()
	r := bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id, Result: bitlog.ResultSuccess,
		ContentChecksum: md5a, IndexChecksum: md5a, Method: bitlog.MethodRead, CheckedAt: at, Case: 1, Supersedes: 3}
	if err := f.bits.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Supersedes = 0 // not stored
	return r
}

func (f *fixture) entry(t *testing.T, user string, action task.Action, id string, at time.Time) auditlog.Entry {
	t.Helper()
	e := auditlog.Entry{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: id, Action: action, UserID: user, Time: at}
	if action != task.ActionDeleteContent {
		e.Checksum = md5a
	}
	if _, err := f.audit.Put(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func (f *fixture) appender(t *testing.T, blobs blob.Store) *derive.Appender {
	t.Helper()
	l, err := evidence.Open(context.Background(), blobs, f.skey, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &derive.Appender{Log: l, Blobs: blobs, Sources: derive.Sources{Bits: f.bits, Audit: f.audit}, Users: derive.DefaultUsers,
		Settle: time.Hour, Start: t0.Add(-time.Hour), Page: 2, Clock: f.clk, Verifier: f.v}
}

// logged returns the log's events by ID, failing on an ID seen twice.
func (f *fixture) logged(t *testing.T) map[string]*evidence.Event {
	t.Helper()
	m := map[string]*evidence.Event{}
	if _, err := evidence.Events(context.Background(), f.blobs, f.v, func(_ int64, e *evidence.Event) error {
		if m[e.ID] != nil {
			t.Errorf("event %s is in the log twice", e.ID)
		}
		m[e.ID] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// seed records a duplication, two bit checks (one failing), a repair,
// deletions, and records that are no events.
func (f *fixture) seed(t *testing.T) {
	f.row(t, "20260701T110000Z", "a", t0, bitlog.ResultSuccess)
	f.row(t, "20260701T110000Z", "b", t0.Add(time.Second), bitlog.ResultFailure)
	stored := bitlog.Row{RunID: "20260701T110000Z", Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "c",
		Result: bitlog.ResultSuccess, Method: bitlog.MethodStored, CheckedAt: t0}
	if err := f.bits.Record(context.Background(), stored); err != nil { // no bytes hashed: no fixity check
		t.Fatal(err)
	}
	f.entry(t, derive.DefaultUsers.Duplication, task.ActionAddContent, "a", t0)
	f.entry(t, derive.DefaultUsers.Repair, task.ActionAddContent, "b", t0.Add(30*time.Second))
	f.entry(t, derive.DefaultUsers.Duplication, task.ActionDeleteContent, "gone", t0.Add(time.Second))
	f.entry(t, "bob", task.ActionDeleteContent, "mine", t0.Add(2*time.Second))
	f.entry(t, "bob", task.ActionAddContent, "new", t0.Add(3*time.Second)) // a user's ingest: no event
}

func TestAppendDerivesEveryActionOnce(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	sum, err := f.appender(t, f.blobs).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Appended != 6 || sum.Records != 8 || len(sum.Underivable) != 0 {
		t.Fatalf("summary %+v: want 6 events of 8 records", sum)
	}
	types := map[evidence.EventType]int{}
	for _, e := range f.logged(t) {
		types[e.Type]++
		if e.Type == evidence.Deletion && e.Object.ContentID == "mine" && (e.Agent.Kind != evidence.Person || e.Agent.Name != "bob" || !strings.Contains(e.Rule, "bob")) {
			t.Errorf("user deletion %+v: want bob as the person and in the rule", e)
		}
		if e.Type == evidence.FixityCheck && e.Object.ContentID == "b" && e.Outcome == evidence.Failure && (e.Fixity.Digest != md5b || e.Fixity.Expected != md5a) {
			t.Errorf("failed check %+v: want digest %s expected %s", e.Fixity, md5b, md5a)
		}
	}
	if types[evidence.FixityCheck] != 2 || types[evidence.Replication] != 1 || types[evidence.Repair] != 1 || types[evidence.Deletion] != 2 {
		t.Fatalf("event types %v", types)
	}
	// A second pass two hours later adds the new records only: the
	// re-check after the repair, which replaced the failed check's row
	// in its run (the failure's event stays: superseded, not a mismatch).
	f.recheck(t, "20260701T110000Z", "b", t0.Add(24*time.Hour))
	f.clk.Advance(2 * time.Hour)
	sum, err = f.appender(t, f.blobs).Run(ctx)
	if err != nil || sum.Appended != 1 || sum.Duplicates != 0 {
		t.Fatalf("second pass: %+v %v, want the one new event", sum, err)
	}
	logged := f.logged(t)
	if n := len(logged); n != 7 {
		t.Fatalf("%d events, want 7", n)
	}
	r, err := derive.CrossCheck(ctx, derive.CheckSources{Sources: derive.Sources{Bits: f.bits, Audit: f.audit}, Rows: f.bits},
		derive.DefaultUsers, logged, t0.Add(-time.Hour), t0.Add(25*time.Hour), 10)
	if err != nil || len(r.Problems) != 0 || r.Superseded != 1 || r.Matched != 6 {
		t.Fatalf("cross-check after the re-check: %+v %v, want the failure superseded", r, err)
	}
}

// crashBlobs fails every save of the cursor after the first `after`,
// as a kill between an Append and the cursor's save would.
type crashBlobs struct {
	blob.Store
	after int32
	n     atomic.Int32
}

var errKilled = errors.New("killed")

func (c *crashBlobs) Put(ctx context.Context, key string, b []byte) error {
	if key == derive.CursorKey && c.n.Add(1) > c.after {
		return errKilled
	}
	return c.Store.Put(ctx, key, b)
}

// TestAppendCrashAnywhere: killed after any page's Append (its cursor
// not saved), the next pass neither loses nor doubles an event.
func TestAppendCrashAnywhere(t *testing.T) {
	for after := int32(0); after < 8; after++ {
		f := newFixture(t)
		f.seed(t)
		ctx := context.Background()
		_, err := f.appender(t, &crashBlobs{Store: f.blobs, after: after}).Run(ctx)
		if !errors.Is(err, errKilled) {
			if err != nil {
				t.Fatal(err)
			}
			if after < 6 { // 2 pages of rows, 3 of entries, the end of the pass
				t.Fatalf("after %d saves: the pass ended without saving its cursor %d times", after, after+1)
			}
		}
		sum, err := f.appender(t, f.blobs).Run(ctx)
		if err != nil {
			t.Fatalf("after %d saves: restart: %v", after, err)
		}
		if len(sum.Conflicts) != 0 {
			t.Fatalf("after %d saves: conflicts %v", after, sum.Conflicts)
		}
		if n := len(f.logged(t)); n != 6 {
			t.Fatalf("crash after %d cursor saves: %d events, want 6", after, n)
		}
		r, err := derive.CrossCheck(ctx, derive.CheckSources{Sources: derive.Sources{Bits: f.bits, Audit: f.audit}, Rows: f.bits},
			derive.DefaultUsers, f.logged(t), t0.Add(-time.Hour), t0.Add(time.Hour), 3)
		if err != nil || len(r.Problems) != 0 || r.Matched != 6 {
			t.Fatalf("crash after %d: cross-check %+v %v", after, r, err)
		}
	}
}

// TestCrossCheckNamesEachChange: a changed bit-log result, an altered and
// a deleted audit entry, a deleted bit-log row: each is named; a
// redelivered check that replaced its row is not a mismatch.
func TestCrossCheckNamesEachChange(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	if _, err := f.appender(t, f.blobs).Run(ctx); err != nil {
		t.Fatal(err)
	}
	check := func() *derive.CrossReport {
		t.Helper()
		r, err := derive.CrossCheck(ctx, derive.CheckSources{Sources: derive.Sources{Bits: f.bits, Audit: f.audit}, Rows: f.bits},
			derive.DefaultUsers, f.logged(t), t0.Add(-time.Hour), t0.Add(time.Hour), 2)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := check(); len(r.Problems) != 0 || r.Matched != 6 {
		t.Fatalf("untouched: %+v", r)
	}
	// The failed check's row says SUCCESS now, at the same time.
	changed := f.recheck(t, "20260701T110000Z", "b", t0.Add(time.Second))
	r := check()
	if len(r.Problems) != 1 {
		t.Fatalf("changed result: %v", r.Problems)
	}
	if p := r.Problems[0].String(); !strings.Contains(p, "bit-log row "+changed.Key()) || !strings.Contains(p, `outcome: log "failure", record "success"`) {
		t.Fatalf("changed result named as %q", p)
	}
	// An audit entry altered: its checksum.
	en := f.entry(t, derive.DefaultUsers.Duplication, task.ActionAddContent, "a", t0)
	if err := f.audit.Delete(ctx, en.Key()); err != nil {
		t.Fatal(err)
	}
	en.Checksum = md5b
	if _, err := f.audit.Put(ctx, en); err != nil {
		t.Fatal(err)
	}
	r = check()
	if len(r.Problems) != 2 {
		t.Fatalf("altered audit entry: %v", r.Problems)
	}
	if p := r.Problems[1].String(); !strings.Contains(p, "audit-log entry acme/2/photos/a") || !strings.Contains(p, "differs from its event") ||
		!strings.Contains(p, "checksum "+md5a+`", record "audit ADD_CONTENT; checksum `+md5b) {
		t.Fatalf("altered audit entry named as %q", p)
	}
	// The entry deleted.
	if err := f.audit.Delete(ctx, en.Key()); err != nil {
		t.Fatal(err)
	}
	r = check()
	if p := r.Problems[len(r.Problems)-1].String(); len(r.Problems) != 2 || !strings.Contains(p, "no audit-log entry holds this replication of acme/2/photos/a") {
		t.Fatalf("deleted audit entry: %v", r.Problems)
	}
}

func TestRecordsThatAreNoEvents(t *testing.T) {
	r := bitlog.Row{RunID: "r", Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "a\x01b", Result: bitlog.ResultSuccess,
		ContentChecksum: md5a, Method: bitlog.MethodRead, CheckedAt: t0}
	if e, err := derive.FromRow(r, derive.DefaultUsers); err == nil || e != nil {
		t.Fatalf("a content ID with a control character: %v %v, want an error", e, err)
	}
	r.ContentID, r.ContentChecksum, r.Method = "a", "crc64nvme:AAAAAAAAAAE=", bitlog.MethodAtRest
	e, err := derive.FromRow(r, derive.DefaultUsers)
	if err != nil || e.Fixity.Algorithm != evidence.CRC64NVME || e.Fixity.Digest != "0000000000000001" || e.Fixity.Method != evidence.MethodAtRest {
		t.Fatalf("at-rest CRC: %+v %v", e, err)
	}
	r.Method = bitlog.MethodStored
	if e, err := derive.FromRow(r, derive.DefaultUsers); e != nil || err != nil {
		t.Fatalf("stored checksums compared: %+v %v, want no event", e, err)
	}
	if run, ok := derive.RunOfDetail(derive.RowDetail(bitlog.Row{Case: 4})); !ok || run != "" {
		t.Fatalf("ad-hoc detail reads back as %q %v", run, ok)
	}
}

// TestCrossCheckContentIndex: the content index must hold what the
// log's writes left: a checksum changed, a deletion undone, a row gone
// are named; a row a later write changed is not.
func TestCrossCheckContentIndex(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	if _, err := f.appender(t, f.blobs).Run(ctx); err != nil {
		t.Fatal(err)
	}
	idx := memcontentindex.New()
	item := func(id string) contentindex.Item {
		return contentindex.Item{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: id}
	}
	upsert := func(id, sum string, at time.Time) {
		t.Helper()
		if _, err := idx.Upsert(ctx, contentindex.Entry{Item: item(id), Checksum: sum, Modified: at}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(id string, at time.Time) {
		t.Helper()
		if _, err := idx.MarkDeleted(ctx, item(id), at); err != nil {
			t.Fatal(err)
		}
	}
	upsert("a", md5a, t0)
	upsert("b", md5a, t0.Add(30*time.Second))
	upsert("gone", md5a, t0.Add(-time.Minute))
	del("gone", t0.Add(time.Second))
	upsert("mine", md5a, t0.Add(-time.Minute))
	del("mine", t0.Add(2*time.Second))
	check := func() []evidence.Problem {
		t.Helper()
		r, err := derive.CrossCheck(ctx, derive.CheckSources{Sources: derive.Sources{Bits: f.bits, Audit: f.audit}, Rows: f.bits, Index: idx},
			derive.DefaultUsers, f.logged(t), t0.Add(-time.Hour), t0.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		return r.Problems
	}
	if p := check(); len(p) != 0 {
		t.Fatalf("a consistent index: %v", p)
	}
	if err := idx.SetChecksum(ctx, item("a"), md5b); err != nil { // changed in place
		t.Fatal(err)
	}
	if p := check(); len(p) != 1 || !strings.Contains(p[0].String(), "content-index row acme/2/photos/a: checksum \""+md5b+"\", while the replication") {
		t.Fatalf("a changed checksum: %v", p)
	}
	upsert("a", md5b, t0.Add(time.Minute)) // a later write
	if p := check(); len(p) != 0 {
		t.Fatalf("a later write: %v", p)
	}
	upsert("gone", md5a, t0.Add(time.Second)) // the deletion undone at its own time
	if p := check(); len(p) != 1 || !strings.Contains(p[0].String(), "live, while the log holds its deletion") {
		t.Fatalf("an undone deletion: %v", p)
	}
}

// TestAppendCursorLost: a log whose cursor is gone is read whole before
// the pass, which starts again at the beginning and appends no event
// twice; with no verifier key the appender refuses.
func TestAppendCursorLost(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	if _, err := f.appender(t, f.blobs).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.blobs.(*dirblob.Store).Root(), filepath.FromSlash(derive.CursorKey))); err != nil {
		t.Fatal(err)
	}
	f.row(t, "20260702T110000Z", "a", t0.Add(24*time.Hour), bitlog.ResultSuccess)
	f.clk.Advance(2 * time.Hour)
	blind := f.appender(t, f.blobs)
	blind.Verifier = nil
	if _, err := blind.Run(ctx); err == nil || !strings.Contains(err.Error(), "no cursor") {
		t.Fatalf("no cursor, no verifier: %v, want a refusal", err)
	}
	sum, err := f.appender(t, f.blobs).Run(ctx)
	if err != nil || sum.Appended != 1 || sum.Duplicates != 6 {
		t.Fatalf("no cursor: %+v %v, want the one new event and the 6 logged ones dropped", sum, err)
	}
	if n := len(f.logged(t)); n != 7 {
		t.Fatalf("%d events, want 7", n)
	}
}

// TestDerivedEventsArePREMIS: the events derived from every kind of
// record export as PREMIS 3 XML the schema accepts (xmllint --schema).
func TestDerivedEventsArePREMIS(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	if _, err := f.appender(t, f.blobs).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var events []*evidence.Event
	for _, e := range f.logged(t) {
		events = append(events, e)
	}
	var buf bytes.Buffer
	if err := evidence.EncodePREMIS(&buf, events); err != nil {
		t.Fatal(err)
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		testenv.Unavailable(t, "xmllint (Debian package libxml2-utils; localstack/up.sh installs it)", err)
	}
	doc := filepath.Join(t.TempDir(), "events.xml")
	if err := os.WriteFile(doc, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join("..", "testdata", "premis", "premis-v3-0.xsd")
	if msg, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, doc).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s\n%s", err, msg, buf.String())
	}
	for _, want := range []string{"fixity check", "replication", "deletion", "repair"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the export has no %q", want)
		}
	}
}
