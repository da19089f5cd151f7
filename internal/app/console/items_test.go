package console_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// fsOpener opens each store of the test registry as a directory store.
type fsOpener struct{ dir string }

func (o fsOpener) Open(_ context.Context, account, storeID string) (storage.Provider, error) {
	return fsstore.New(filepath.Join(o.dir, account+"-"+storeID))
}

// itemsEnv is the env with a content index, statistics, stores and an
// audit queue: one item on stores 1, 2 and 3 with its verdicts, deleted
// (and so recoverable) on store 3.
type itemsEnv struct {
	*env
	index  *memcontentindex.Index
	stats  *memspacestats.Store
	audit  *memqueue.Queue
	stores fsOpener
}

const itemID = "2026/img-0042.jpg"

func newItemsEnv(t *testing.T, opts ...func(*console.Config)) *itemsEnv {
	t.Helper()
	ie := &itemsEnv{index: memcontentindex.New(), audit: memqueue.New("mill-audit", memqueue.Config{}), stores: fsOpener{t.TempDir()}}
	ie.env = newEnv(t, append([]func(*console.Config){func(c *console.Config) {
		ie.stats = memspacestats.New(c.Clock)
		c.Index, c.Stats, c.Stores, c.AuditQueue = ie.index, ie.stats, ie.stores, ie.audit
	}}, opts...)...)
	ctx := context.Background()
	putCopies(t, ie.stores, ie.index, ie.bits, "20260501T000000Z", ie.clock.Now().Add(-time.Hour), time.Date(2026, 4, 30, 3, 0, 0, 0, time.UTC))
	p3, _ := ie.stores.Open(ctx, "acme", "3")
	if err := p3.Delete(ctx, "photos", itemID); err != nil {
		t.Fatal(err)
	}
	return ie
}

// itemBody is the content of the item of the item tests.
var itemBody = []byte("the bytes of image 42")

// putCopies writes the item on stores 1, 2 and 3 of acme's photos space,
// its rows in the index (modified then), and a SUCCESS verdict of each copy
// checked by reading at checked in run.
func putCopies(t *testing.T, o storage.Opener, x contentindex.Index, bits bitlog.Log, run string, modified, checked time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, st := range []string{"1", "2", "3"} {
		p, err := o.Open(ctx, "acme", st)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CreateSpace(ctx, "photos"); err != nil {
			t.Fatal(err)
		}
		info, err := p.Put(ctx, "photos", itemID, bytes.NewReader(itemBody), storage.PutOptions{Size: int64(len(itemBody)), MimeType: "image/jpeg"})
		if err != nil {
			t.Fatal(err)
		}
		n := info.Size
		if _, err := x.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: st, SpaceID: "photos", ContentID: itemID},
			Checksum: info.Checksum, Size: &n, MimeType: "image/jpeg", Modified: modified}); err != nil {
			t.Fatal(err)
		}
		if err := bits.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: st, SpaceID: "photos", ContentID: itemID,
			Result: bitlog.ResultSuccess, Case: 1, Method: bitlog.MethodRead, CheckedAt: checked,
			ContentChecksum: info.Checksum, StorageChecksum: info.Checksum}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestItemSearchAndPage: a prefix search finds the item's three copies;
// its page shows each store's MD5 and last verdict (method and date).
func TestItemSearchAndPage(t *testing.T) {
	e := newItemsEnv(t)
	resp, body := e.do(e.viewer, "GET", "/items?account=acme&space=photos&prefix=2026%2Fimg-00", nil)
	if resp.StatusCode != 200 || strings.Count(body, `href="/item?account=acme&amp;id=2026%2Fimg-0042.jpg&amp;space=photos"`) != 3 {
		t.Fatalf("search: %d\n%s", resp.StatusCode, body)
	}
	resp, body = e.do(e.viewer, "GET", "/item?account=acme&space=photos&id="+url.QueryEscape(itemID), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("item: %d\n%s", resp.StatusCode, body)
	}
	sum := fmt.Sprintf("%x", md5.Sum(itemBody))
	copies, _, _ := strings.Cut(body[strings.Index(body, `id="copies"`):], "</table>")
	if n := strings.Count(copies, sum); n != 3 {
		t.Errorf("the item page shows the MD5 %d times, want 3 (one per copy)", n)
	}
	if n := strings.Count(copies, "read 2026-04-30 03:00:00 UTC"); n != 3 {
		t.Errorf("the item page shows %d verdicts, want 3", n)
	}
	for _, want := range []string{`id="copy-1"`, `id="copy-2"`, `id="copy-3"`, "not in the store"} {
		if !strings.Contains(body, want) {
			t.Errorf("the item page lacks %q", want)
		}
	}
	if strings.Contains(body, "Restore</button>") {
		t.Error("the viewer sees a restore control")
	}
	// Hostile input: an over-long or missing name is a 400.
	if resp, _ := e.do(e.viewer, "GET", "/item?account=acme&space=photos&id="+strings.Repeat("a", 2000), nil); resp.StatusCode != 400 {
		t.Errorf("a 2,000-byte id: %d, want 400", resp.StatusCode)
	}
	if resp, _ := e.do(e.viewer, "GET", "/items?account=acme", nil); resp.StatusCode != 400 {
		t.Errorf("a search without a space: %d, want 400", resp.StatusCode)
	}
}

// TestItemRestore: an admin restores store 3's deleted copy — audited and
// in the change log; a viewer's forged POST is a 403 and changes nothing.
func TestItemRestore(t *testing.T) {
	e := newItemsEnv(t)
	ctx := context.Background()
	p3, _ := e.stores.Open(ctx, "acme", "3")
	vs, err := p3.(storage.Recoverer).Versions(ctx, "photos", itemID)
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	form := url.Values{"account": {"acme"}, "store": {"3"}, "space": {"photos"}, "id": {itemID}, "version": {vs[0].ID}}
	if resp, _ := e.do(e.viewer, "POST", "/item/restore", form); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the viewer's restore: %d, want 403", resp.StatusCode)
	}
	if _, err := p3.Head(ctx, "photos", itemID); err == nil {
		t.Fatal("the viewer's POST restored the copy")
	}
	_, body := e.do(e.admin, "GET", "/item?account=acme&space=photos&id="+url.QueryEscape(itemID), nil)
	if !strings.Contains(body, "Restore</button>") {
		t.Fatal("the admin sees no restore control")
	}
	resp, _ := e.do(e.admin, "POST", "/item/restore", form)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "msg=restored") {
		t.Fatalf("restore: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if info, err := p3.Head(ctx, "photos", itemID); err != nil || info.Size != 21 {
		t.Fatalf("after the restore: %+v, %v", info, err)
	}
	if n := e.audit.Len(); n != 1 {
		t.Errorf("%d audit messages, want 1", n)
	}
	if log := e.changeLog(); !strings.Contains(log, "item.restore") || !strings.Contains(log, "acme/3/photos/"+itemID) {
		t.Errorf("the change log: %s", log)
	}
}

// TestHomePage: a healthy mill says so; a failure, a dead letter and a
// lost worker each show, linked to their page.
func TestHomePage(t *testing.T) {
	e := newItemsEnv(t)
	_, body := e.do(e.viewer, "GET", "/", nil)
	if !strings.Contains(body, "no open failures, no dead letters, the fleet healthy") {
		t.Fatalf("a healthy mill: %s", body)
	}
	ctx := context.Background()
	if err := e.bits.PutReport(ctx, bitlog.Report{RunID: "20260501T000000Z", Account: "acme", StoreID: "1", SpaceID: "photos", Result: bitlog.ResultFailure,
		Counts: bitlog.Counts{Total: 3, Success: 2, Failure: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.queues[queue.KeyDeadLetter].Send(ctx, queue.SendEntry{Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	beat := e.clock.Now().Add(-10 * time.Minute)
	if err := e.fleet.Put(ctx, fleet.Worker{ID: "w-lost", Heartbeat: beat, Identity: process.Identity{Started: beat}, Interval: 30 * time.Second, Expires: beat.Add(time.Hour), State: fleet.StateRunning}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second) // past the queue read's cache
	_, body = e.do(e.viewer, "GET", "/", nil)
	for _, want := range []string{"1 bit-integrity failure is open", "1 dead letter waits", "1 worker is lost",
		`id="fig-failures"><a href="/bit/results?result=FAILURE">`, `id="fig-dead-letters"><a href="/dead-letters">`, `id="fig-lost"><a href="/fleet">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the home page lacks %q", want)
		}
	}
}

// TestStatisticsPage: the page's figures, its chart and its CSV are the
// statistics' (millctl stats reads the same Store and Groups).
func TestStatisticsPage(t *testing.T) {
	e := newItemsEnv(t)
	ctx := context.Background()
	for i, run := range []string{"20260401T000000Z", "20260501T000000Z"} {
		for _, st := range []string{"1", "2"} {
			if err := e.stats.Put(ctx, spacestats.Stats{RunID: run, Account: "acme", StoreID: st, SpaceID: "photos", Items: int64(100 * (i + 1)), Bytes: int64(4096 * (i + 1)),
				Measured: e.clock.Now().Add(time.Duration(i-2) * 24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, body := e.do(e.viewer, "GET", "/statistics?by=store", nil)
	for _, want := range []string{`<td class="num items">200</td>`, `<td class="num bytes">8192</td>`, "Total: 2 spaces, 400 items, 16384 bytes", `<path class="line" d="M0.0 `} {
		if !strings.Contains(body, want) {
			t.Errorf("the statistics page lacks %q", want)
		}
	}
	resp, csv := e.do(e.viewer, "GET", "/statistics.csv?by=store", nil)
	if resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || !strings.Contains(csv, "acme,1,,1,200,8192,20260501T000000Z,") {
		t.Errorf("CSV: %s\n%s", resp.Header.Get("Content-Type"), csv)
	}
	if resp, _ := e.do(e.viewer, "GET", "/statistics?by=nothing", nil); resp.StatusCode != 400 {
		t.Errorf("by=nothing: %d", resp.StatusCode)
	}
}

type fakeAlarms []console.Alarm

func (f fakeAlarms) InAlarm(context.Context) ([]console.Alarm, error) { return f, nil }

// TestHomeAlarms: an alarm in ALARM is named on the home page and makes
// it say that not everything is safe.
func TestHomeAlarms(t *testing.T) {
	e := newEnv(t, func(c *console.Config) {
		c.Alarms = fakeAlarms{{Name: "mill-dead-letter-not-empty", Reason: "Threshold Crossed", Since: time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)}}
	})
	_, body := e.do(e.viewer, "GET", "/", nil)
	for _, want := range []string{"1 alarm is in ALARM", "<code>mill-dead-letter-not-empty</code> since 2026-05-01 11:00:00 UTC: Threshold Crossed"} {
		if !strings.Contains(body, want) {
			t.Errorf("the home page lacks %q", want)
		}
	}
}

// TestItemSearchPages: a search of more than a page links the next page,
// which starts after the last row shown.
func TestItemSearchPages(t *testing.T) {
	e := newItemsEnv(t)
	ctx := context.Background()
	for i := range 60 {
		if _, err := e.index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos",
			ContentID: fmt.Sprintf("2027/p-%03d", i)}, Modified: e.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	_, first := e.do(e.viewer, "GET", "/items?account=acme&space=photos&prefix=2027%2F", nil)
	next := regexp.MustCompile(`href="([^"]*)" id="next"`).FindStringSubmatch(first)
	if strings.Count(first, `<td class="content-id">`) != 50 || next == nil || !strings.Contains(first, "2027/p-049") {
		t.Fatalf("the first page: %d rows, next %v", strings.Count(first, `<td class="content-id">`), next)
	}
	_, second := e.do(e.viewer, "GET", strings.ReplaceAll(next[1], "&amp;", "&"), nil)
	if n := strings.Count(second, `<td class="content-id">`); n != 10 || strings.Contains(second, "2027/p-049") || !strings.Contains(second, "2027/p-050") ||
		strings.Contains(second, `id="next"`) {
		t.Errorf("the second page: %d rows\n%s", n, second)
	}
}
