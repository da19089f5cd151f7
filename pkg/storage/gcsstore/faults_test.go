package gcsstore

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
)

// fault is what the fault proxy does with one request a rule matched.
type fault int

const (
	pass       fault = iota // forward it
	failBefore              // answer 503 without forwarding: GCS never saw it
	failAfter               // forward it, then answer 503: GCS applied it, the answer is lost
	resetAfter              // forward it, then drop the connection unanswered
	refuse412               // answer 412 without forwarding, as GCS answers a precondition the emulator does not check
	interfere               // run the rule's interference (another writer's), then forward it
)

// rule picks requests and says what to do with each in turn (pass once
// the faults are used up); hits counts the requests it matched.
type rule struct {
	match     func(*http.Request) bool
	faults    []fault
	hits      int
	interfere func()
}

// faultProxy stands between a store and fake-gcs-server, failing the
// requests its rules pick.
type faultProxy struct {
	next  http.Handler
	mu    sync.Mutex
	rules []*rule
}

// on adds a rule for the requests match picks.
func (p *faultProxy) on(match func(*http.Request) bool, faults ...fault) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &rule{match: match, faults: faults}
	p.rules = append(p.rules, r)
	return r
}

// count returns how many requests r matched.
func (p *faultProxy) count(r *rule) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return r.hits
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, other := pass, func() {}
	p.mu.Lock()
	for _, ru := range p.rules {
		if ru.match(r) {
			if ru.hits < len(ru.faults) {
				f = ru.faults[ru.hits]
			}
			if ru.interfere != nil {
				other = ru.interfere
			}
			ru.hits++
			break
		}
	}
	p.mu.Unlock()
	switch f {
	case pass:
		p.next.ServeHTTP(w, r)
	case interfere:
		other()
		p.next.ServeHTTP(w, r)
	case failBefore:
		http.Error(w, `{"error":{"code":503,"message":"injected before"}}`, http.StatusServiceUnavailable)
	case failAfter, resetAfter:
		p.next.ServeHTTP(httptest.NewRecorder(), r)
		if f == resetAfter {
			panic(http.ErrAbortHandler)
		}
		http.Error(w, `{"error":{"code":503,"message":"injected after"}}`, http.StatusServiceUnavailable)
	case refuse412:
		http.Error(w, `{"error":{"code":412,"message":"injected: conditionNotMet"}}`, http.StatusPreconditionFailed)
	}
}

// request picks requests of method whose path contains each of parts
// (decoded object names; "x$": ends with x) and whose query has each of query ("k=v", "k"
// for any value, "!k" for none).
func request(method string, parts []string, query ...string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if r.Method != method {
			return false
		}
		for _, p := range parts {
			if end, ok := strings.CutSuffix(p, "$"); ok && !strings.HasSuffix(r.URL.Path, end) || !ok && !strings.Contains(r.URL.Path, p) {
				return false
			}
		}
		q := r.URL.Query()
		for _, kv := range query {
			if k, ok := strings.CutPrefix(kv, "!"); ok {
				if q.Has(k) {
					return false
				}
				continue
			}
			k, v, hasV := strings.Cut(kv, "=")
			if !q.Has(k) || hasV && q.Get(k) != v {
				return false
			}
		}
		return true
	}
}

// faultTarget returns the endpoint of the fake-gcs-server behind the
// fault proxy: by default one inside the test process;
// TestRetryOnEmulator runs the tests on the one `make up` starts.
var faultTarget = testenv.FakeGCS

// TestRetryOnEmulator runs the fault tests against the fake-gcs-server at
// 127.0.0.1:4443 (testenv.GCSEmulator), whose version may differ from the
// one linked into the tests.
func TestRetryOnEmulator(t *testing.T) {
	ep := testenv.GCSEmulator(t)
	faultTarget = func(testing.TB) string { return ep }
	t.Cleanup(func() { faultTarget = testenv.FakeGCS })
	for name, test := range map[string]func(*testing.T){
		"CreateSpace":   TestRetryCreateSpace,
		"Delete":        TestRetryDelete,
		"TrashCopy":     TestRetryTrashCopy,
		"SetProperties": TestRetrySetProperties,
		"RestoreCopy":   TestRestoreCopyNotRetried,
		"Put":           TestRetryPut,
		"MarkerWrites":  TestRetryMarkerWrites,
		"Uploads":       TestRetryUploadHousekeeping,
	} {
		t.Run(name, test)
	}
}

// faultFixture is a store reaching fake-gcs-server through a fault proxy,
// its backoff on a clock that waits no time, and another tool's client
// of the same bucket (not through the proxy).
type faultFixture struct {
	s      *Store
	p      *faultProxy
	clk    *instantClock
	other  *gcs.BucketHandle
	prefix string
}

func newFaultFixture(t *testing.T, cfg Config) *faultFixture {
	ep := faultTarget(t)
	target, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{next: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := emulatorClient(t, srv.URL)
	clk := &instantClock{}
	c.retry.clock = clk
	other := testenv.GCSClient(t, ep)
	cfg.Bucket, cfg.Prefix = testenv.GCSBucket(t, other), "p/"
	s, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &faultFixture{s: s, p: p, clk: clk, other: other.Bucket(cfg.Bucket), prefix: cfg.Prefix}
}

// newFaultSpace is newFaultFixture with space "sp" created.
func newFaultSpace(t *testing.T, cfg Config) *faultFixture {
	f := newFaultFixture(t, cfg)
	if err := f.s.CreateSpace(t.Context(), "sp"); err != nil {
		t.Fatal(err)
	}
	return f
}

// names lists the names of the bucket's objects under prefix.
func (f *faultFixture) names(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	it := f.other.Objects(t.Context(), &gcs.Query{Prefix: f.prefix + prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimPrefix(a.Name, f.prefix))
	}
}

// waits checks that the store waited n times, each the first backoff
// step (each request retried once), or when doubling, twice as long each
// time (one request retried n times).
func (f *faultFixture) waits(t *testing.T, what string, n int, doubling bool) {
	t.Helper()
	got := f.clk.take()
	if len(got) != n {
		t.Errorf("%s: the store waited %v, want %d waits", what, got, n)
	}
	for i, d := range got {
		want := defaultRetryFirst
		if doubling {
			want <<= i
		}
		if d != want {
			t.Errorf("%s: wait %d was %v, want %v", what, i, d, want)
		}
	}
}

func (f *faultFixture) put(t *testing.T, space, id string, data []byte, opts storage.PutOptions) {
	t.Helper()
	opts.Size = int64(len(data))
	if _, err := f.s.Put(t.Context(), space, id, bytes.NewReader(data), opts); err != nil {
		t.Fatalf("Put(%s/%s): %v", space, id, err)
	}
}

var faultNames = map[fault]string{failBefore: "fail before", failAfter: "fail after", resetAfter: "reset after"}

// TestRetryCreateSpace: a space-marker creation (ifGenerationMatch=0)
// whose first attempt fails transiently, applied by GCS or not, is
// retried and reports that it created the space; one whose retry finds
// another creator's marker reports that it did not.
func TestRetryCreateSpace(t *testing.T) {
	for _, fl := range []fault{failBefore, failAfter, resetAfter} {
		t.Run(faultNames[fl], func(t *testing.T) {
			f := newFaultFixture(t, Config{})
			ctx := t.Context()
			create := f.p.on(request(http.MethodPost, []string{"/upload/"}, "ifGenerationMatch=0"), fl)
			created, err := f.s.CreateSpaceIfAbsent(ctx, "sp")
			if err != nil || !created {
				t.Fatalf("CreateSpaceIfAbsent after a %s: created=%v, %v; want created", faultNames[fl], created, err)
			}
			if n := f.p.count(create); n != 2 {
				t.Errorf("the marker creation was sent %d times, want 2", n)
			}
			f.waits(t, "create", 1, false)
			if acls, err := f.s.SpaceACLs(ctx, "sp"); err != nil || len(acls) != 0 {
				t.Errorf("SpaceACLs of the new space: %v, %v; want none", acls, err)
			}
		})
	}
	t.Run("another creator", func(t *testing.T) {
		f := newFaultFixture(t, Config{})
		ctx := t.Context()
		if created, err := f.s.CreateSpaceIfAbsent(ctx, "sp"); err != nil || !created {
			t.Fatalf("first CreateSpaceIfAbsent: %v, %v", created, err)
		}
		if err := f.s.SetSpaceACLs(ctx, "sp", map[string]string{"user-a": "READ"}); err != nil {
			t.Fatal(err)
		}
		create := f.p.on(request(http.MethodPost, []string{"/upload/"}, "ifGenerationMatch=0"), failBefore)
		created, err := f.s.CreateSpaceIfAbsent(ctx, "sp")
		if err != nil || created {
			t.Errorf("CreateSpaceIfAbsent of an existing space, retried after a 503: created=%v, %v; want not created", created, err)
		}
		if n := f.p.count(create); n != 2 {
			t.Errorf("the marker creation was sent %d times, want 2", n)
		}
		if acls, err := f.s.SpaceACLs(ctx, "sp"); err != nil || acls["user-a"] != "READ" {
			t.Errorf("the space's ACLs after the refused creation: %v, %v; want the ones set", acls, err)
		}
	})
	t.Run("always failing", func(t *testing.T) {
		f := newFaultFixture(t, Config{})
		create := f.p.on(request(http.MethodPost, []string{"/upload/"}, "ifGenerationMatch=0"), failBefore, failBefore, failBefore, failBefore, failBefore, failBefore)
		if _, err := f.s.CreateSpaceIfAbsent(t.Context(), "sp"); err == nil {
			t.Error("CreateSpaceIfAbsent always answered 503 succeeded")
		}
		if n := f.p.count(create); n != 1+defaultRetries {
			t.Errorf("the marker creation was sent %d times, want %d", n, 1+defaultRetries)
		}
		f.waits(t, "create", defaultRetries, true)
	})
}

// TestRetryDelete: an item's delete (conditional on the generation read)
// applied by GCS whose answer is lost is retried; the 404 the retry gets
// is success, and the trash copy of what was deleted stays.
func TestRetryDelete(t *testing.T) {
	for _, fl := range []fault{failBefore, failAfter, resetAfter} {
		t.Run(faultNames[fl], func(t *testing.T) {
			f := newFaultSpace(t, Config{})
			ctx := t.Context()
			f.put(t, "sp", "item", []byte("deleted bytes"), storage.PutOptions{})
			del := f.p.on(request(http.MethodDelete, []string{"p/sp/item"}, "ifGenerationMatch"), fl)
			if err := f.s.Delete(ctx, "sp", "item"); err != nil {
				t.Fatalf("Delete after a %s: %v", faultNames[fl], err)
			}
			if n := f.p.count(del); n != 2 {
				t.Errorf("the delete was sent %d times, want 2", n)
			}
			f.waits(t, "delete", 1, false)
			if _, err := f.s.Head(ctx, "sp", "item"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Head of the deleted item: %v, want ErrNotFound", err)
			}
			vs, err := f.s.Versions(ctx, "sp", "item")
			if err != nil || len(vs) != 1 || vs[0].Reason != storage.ReplacedByDelete {
				t.Errorf("Versions of the deleted item: %+v, %v; want its one trash copy", vs, err)
			}
		})
	}
}

// TestRetryTrashCopy: the copy that keeps a replaced item recoverable
// goes to a fresh name on condition that it is new; applied by GCS with
// its answer lost, it is retried, and the 412 GCS gives the retry is the
// copy made: one trash copy, and the delete goes on.
func TestRetryTrashCopy(t *testing.T) {
	f := newFaultSpace(t, Config{})
	ctx := t.Context()
	f.put(t, "sp", "item", []byte("kept bytes"), storage.PutOptions{})
	copyRule := f.p.on(request(http.MethodPost, []string{"/rewriteTo/", "p/" + TrashPrefix}, "ifGenerationMatch=0"), failAfter, refuse412)
	if err := f.s.Delete(ctx, "sp", "item"); err != nil {
		t.Fatalf("Delete whose trash copy was applied, answered 503, then refused 412: %v", err)
	}
	if n := f.p.count(copyRule); n != 2 {
		t.Errorf("the trash copy was sent %d times, want 2", n)
	}
	f.waits(t, "trash copy", 1, false)
	vs, err := f.s.Versions(ctx, "sp", "item")
	if err != nil || len(vs) != 1 || vs[0].Info.Size != int64(len("kept bytes")) {
		t.Fatalf("Versions: %+v, %v; want the one trash copy", vs, err)
	}
	if _, err := f.s.Restore(ctx, "sp", "item", vs[0].ID); err != nil {
		t.Errorf("Restore of the trash copy: %v", err)
	}
}

// TestRetrySetProperties: a property patch is conditional on the
// generation and metageneration read. Applied by GCS with its answer lost,
// the retry is refused (412, the metageneration moved): that is success
// when the item holds the new properties. A retry refused while the item
// does not hold them (another writer's change) fails with ErrChanged and
// changes nothing.
func TestRetrySetProperties(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []fault
		ok     bool
	}{
		{"applied, retry refused", []fault{failAfter, refuse412}, true},
		{"reset after, retry refused", []fault{resetAfter, refuse412}, true},
		{"applied, retry passes", []fault{failAfter}, true},
		{"not applied, retry passes", []fault{failBefore}, true},
		{"not applied, retry refused", []fault{failBefore, refuse412}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultSpace(t, Config{})
			ctx := t.Context()
			f.put(t, "sp", "item", []byte("bytes"), storage.PutOptions{Properties: map[string]string{"k": "old"}})
			patch := f.p.on(request(http.MethodPatch, []string{"p/sp/item"}, "ifGenerationMatch", "ifMetagenerationMatch"), tc.faults...)
			err := f.s.SetProperties(ctx, "sp", "item", map[string]string{"k": "new"})
			if n := f.p.count(patch); n != 2 {
				t.Errorf("the patch was sent %d times, want 2", n)
			}
			info, herr := f.s.Head(ctx, "sp", "item")
			if herr != nil {
				t.Fatal(herr)
			}
			if tc.ok {
				if err != nil || info.Properties["k"] != "new" {
					t.Errorf("SetProperties: %v, properties now %v; want success and k=new", err, info.Properties)
				}
				return
			}
			if !errors.Is(err, storage.ErrChanged) || info.Properties["k"] != "old" {
				t.Errorf("SetProperties refused on its retry: %v, properties now %v; want ErrChanged and k=old", err, info.Properties)
			}
		})
	}
}

// TestRestoreCopyNotRetried: the copy of a trash copy over an item
// (Restore, unconditional: GCS cannot tell a second one from another
// writer's) is sent once: a 503 fails the restore, which is retried whole.
func TestRestoreCopyNotRetried(t *testing.T) {
	f := newFaultSpace(t, Config{})
	ctx := t.Context()
	f.put(t, "sp", "item", []byte("first"), storage.PutOptions{})
	f.put(t, "sp", "item", []byte("second"), storage.PutOptions{})
	f.clk.take()
	restore := f.p.on(request(http.MethodPost, []string{"/rewriteTo/", "/o/p/sp/item$"}, "!ifGenerationMatch"), failBefore)
	if _, err := f.s.Restore(ctx, "sp", "item", ""); err == nil {
		t.Error("Restore whose copy was answered 503 succeeded")
	}
	if n := f.p.count(restore); n != 1 {
		t.Errorf("the restoring copy was sent %d times, want once", n)
	}
	f.waits(t, "restore", 0, false)
}

// TestRetryPut: an item's write is conditional on the generation kept
// recoverable (none for a new item): applied by GCS with its answer lost,
// it is retried, and the refusal the retry meets is the write made. One
// refused because another writer came first keeps that writer's
// generation recoverable too, then writes over it (last writer wins).
func TestRetryPut(t *testing.T) {
	large := bytes.Repeat([]byte("0123456789abcdef"), 40<<10) // 640 KiB
	cfg := Config{Upload: storage.Upload{Threshold: 256 << 10, Transfer: storage.Transfer{PartSize: 256 << 10}}}
	small := request(http.MethodPost, []string{"/upload/"}, "uploadType=multipart", "ifGenerationMatch")
	copyOver := request(http.MethodPost, []string{"/rewriteTo/", "/o/p/sp/item$"}, "ifGenerationMatch", "sourceGeneration")
	for _, tc := range []struct {
		name     string
		existing bool // the item had a previous version
		data     []byte
		match    func(*http.Request) bool
		faults   []fault
		sends    int
	}{
		{"new, fail before", false, []byte("new bytes"), small, []fault{failBefore}, 2},
		{"new, fail after", false, []byte("new bytes"), small, []fault{failAfter}, 2},
		{"new, reset after", false, []byte("new bytes"), small, []fault{resetAfter}, 2},
		{"overwrite, fail before", true, []byte("new bytes"), small, []fault{failBefore}, 2},
		{"overwrite, fail after", true, []byte("new bytes"), small, []fault{failAfter}, 2},
		{"overwrite, reset after", true, []byte("new bytes"), small, []fault{resetAfter}, 2},
		{"large copy, fail after, refused", true, large, copyOver, []fault{failAfter, refuse412}, 2},
		{"large copy, fail before", true, large, copyOver, []fault{failBefore}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultSpace(t, cfg)
			ctx := t.Context()
			if tc.existing {
				f.put(t, "sp", "item", []byte("old bytes"), storage.PutOptions{})
			}
			f.clk.take()
			r := f.p.on(tc.match, tc.faults...)
			f.put(t, "sp", "item", tc.data, storage.PutOptions{Properties: map[string]string{"k": "v"}})
			if n := f.p.count(r); n != tc.sends {
				t.Errorf("the write was sent %d times, want %d", n, tc.sends)
			}
			f.waits(t, "put", 1, false)
			info, err := f.s.Head(ctx, "sp", "item")
			if err != nil || info.Checksum != md5hexOf(tc.data) || info.Properties["k"] != "v" {
				t.Errorf("Head: %+v, %v; want the bytes and properties put", info, err)
			}
			vs, err := f.s.Versions(ctx, "sp", "item")
			want := 0
			if tc.existing {
				want = 1
			}
			if err != nil || len(vs) != want {
				t.Errorf("Versions: %d, %v; want %d (what the put replaced, once)", len(vs), err, want)
			}
		})
	}
	t.Run("another writer first", func(t *testing.T) {
		f := newFaultSpace(t, cfg)
		ctx := t.Context()
		f.put(t, "sp", "item", []byte("old bytes"), storage.PutOptions{})
		r := f.p.on(request(http.MethodPost, []string{"/upload/"}, "uploadType=multipart"), interfere)
		// Another tool replaces the item between the store's trash copy
		// and its write.
		r.interfere = otherToolWrites(t, f)
		f.put(t, "sp", "item", []byte("new bytes"), storage.PutOptions{})
		if n := f.p.count(r); n != 2 {
			t.Errorf("the write was sent %d times, want 2 (refused, then over the other writer's)", n)
		}
		info, err := f.s.Head(ctx, "sp", "item")
		if err != nil || info.Checksum != md5hexOf([]byte("new bytes")) {
			t.Errorf("Head: %+v, %v; want the store's bytes (last writer)", info, err)
		}
		vs, err := f.s.Versions(ctx, "sp", "item")
		if err != nil || len(vs) != 2 {
			t.Fatalf("Versions: %+v, %v; want 2 (the old bytes and the other tool's)", vs, err)
		}
		sizes := map[int64]bool{vs[0].Info.Size: true, vs[1].Info.Size: true}
		if !sizes[int64(len("old bytes"))] || !sizes[int64(len("other tool's bytes"))] {
			t.Errorf("Versions hold sizes %v, want the old bytes' and the other tool's", sizes)
		}
	})
}

// TestRetryMarkerWrites: a space's ACL rewrite and its removal are
// conditional on the marker's generation, so retried: applied by GCS with
// the answer lost, they end as asked.
func TestRetryMarkerWrites(t *testing.T) {
	for _, fl := range []fault{failBefore, failAfter, resetAfter} {
		t.Run(faultNames[fl], func(t *testing.T) {
			f := newFaultSpace(t, Config{})
			ctx := t.Context()
			acls := f.p.on(request(http.MethodPost, []string{"/upload/"}, "ifGenerationMatch"), fl, refuse412)
			if err := f.s.SetSpaceACLs(ctx, "sp", map[string]string{"user-a": "READ"}); err != nil {
				t.Fatalf("SetSpaceACLs after a %s: %v", faultNames[fl], err)
			}
			if got, err := f.s.SpaceACLs(ctx, "sp"); err != nil || got["user-a"] != "READ" {
				t.Errorf("SpaceACLs: %v, %v; want user-a READ", got, err)
			}
			// A refused retry after a failure GCS never saw is another
			// writer's change: the marker is read again and written over.
			wantSends := 3
			if fl != failBefore {
				wantSends = 2
			}
			if n := f.p.count(acls); n != wantSends {
				t.Errorf("the marker write was sent %d times, want %d", n, wantSends)
			}
			del := f.p.on(request(http.MethodDelete, []string{"/o/p/sp$"}, "ifGenerationMatch"), fl)
			if err := f.s.DeleteSpace(ctx, "sp"); err != nil {
				t.Fatalf("DeleteSpace after a %s: %v", faultNames[fl], err)
			}
			if n := f.p.count(del); n != 2 {
				t.Errorf("the marker delete was sent %d times, want 2", n)
			}
			if spaces, err := f.s.ListSpaces(ctx); err != nil || len(spaces) != 0 {
				t.Errorf("ListSpaces after DeleteSpace: %v, %v; want none", spaces, err)
			}
		})
	}
}

// TestRetryUploadHousekeeping: the start of a resumable upload session is
// retried after a 503 (before or after GCS opened one), and the removal of
// the temporary upload a put without an MD5 copies from, conditional on
// its generation, is retried: no temporary object is left.
func TestRetryUploadHousekeeping(t *testing.T) {
	large := bytes.Repeat([]byte("fedcba9876543210"), 40<<10) // 640 KiB
	cfg := Config{Upload: storage.Upload{Threshold: 256 << 10, Transfer: storage.Transfer{PartSize: 256 << 10}}}
	for _, fl := range []fault{failBefore, failAfter} {
		t.Run(faultNames[fl], func(t *testing.T) {
			f := newFaultSpace(t, cfg)
			ctx := t.Context()
			start := f.p.on(request(http.MethodPost, []string{"/upload/"}, "uploadType=resumable", "!upload_id"), fl, pass, fl)
			del := f.p.on(request(http.MethodDelete, []string{"p/.mill-tmp/"}, "ifGenerationMatch"), fl)
			f.put(t, "sp", "with-md5", large, storage.PutOptions{Checksum: md5hexOf(large)})
			f.put(t, "sp", "without-md5", large, storage.PutOptions{})
			if n := f.p.count(start); n != 4 {
				t.Errorf("%d resumable sessions were started, want 4 (two puts, each failed once)", n)
			}
			if n := f.p.count(del); n != 2 {
				t.Errorf("the temporary upload's removal was sent %d times, want 2", n)
			}
			f.waits(t, "uploads", 3, false)
			if left := f.names(t, ".mill-tmp/"); len(left) != 0 {
				t.Errorf("temporary uploads left: %v", left)
			}
			for _, id := range []string{"with-md5", "without-md5"} {
				info, err := f.s.Head(ctx, "sp", id)
				if err != nil || info.Checksum != md5hexOf(large) {
					t.Errorf("Head(%s): %+v, %v; want the bytes put", id, info, err)
				}
			}
		})
	}
}

func md5hexOf(b []byte) string {
	s := storage.NewSums()
	s.Write(b)
	return s.MD5()
}

// TestPutWinsEveryLostRace: another writer replaces the item before each
// of the store's conditional writes. After losing every race but the last,
// the put writes unconditionally and wins, as every write did before
// writes were conditional, instead of failing with ErrChanged
// (storagetest's Concurrent did, under load).
func TestPutWinsEveryLostRace(t *testing.T) {
	f := newFaultSpace(t, Config{})
	ctx := t.Context()
	f.put(t, "sp", "item", []byte("old bytes"), storage.PutOptions{})
	faults := make([]fault, overwriteTries)
	for i := range faults {
		faults[i] = interfere
	}
	r := f.p.on(request(http.MethodPost, []string{"/upload/"}, "uploadType=multipart"), faults...)
	r.interfere = otherToolWrites(t, f)
	f.put(t, "sp", "item", []byte("new bytes"), storage.PutOptions{})
	if n := f.p.count(r); n != overwriteTries {
		t.Errorf("the write was sent %d times, want %d", n, overwriteTries)
	}
	info, err := f.s.Head(ctx, "sp", "item")
	if err != nil || info.Checksum != md5hexOf([]byte("new bytes")) {
		t.Errorf("Head: %+v, %v; want the store's bytes (last writer)", info, err)
	}
}

// otherToolWrites returns an interference: another tool writes sp/item
// behind the store's back.
func otherToolWrites(t *testing.T, f *faultFixture) func() {
	return func() {
		w := f.other.Object(f.prefix + "sp/item").NewWriter(t.Context())
		if _, err := w.Write([]byte("other tool's bytes")); err != nil {
			t.Error(err)
		}
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}
}
