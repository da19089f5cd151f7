package bit_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// archive is an s3-like listing: items of numbered IDs, every third one
// in an archival class, at keys "pfx/<space>/<id>" of bucket "b".
type archive struct{ listing }

func (a *archive) Kind() storage.Kind { return storage.KindS3 }

func classOf(i int) string {
	switch i % 6 {
	case 0:
		return "GLACIER"
	case 3:
		return "DEEP_ARCHIVE"
	case 1:
		return "STANDARD_IA"
	}
	return ""
}

func (a *archive) ListEntries(ctx context.Context, space, after string, limit int) ([]storage.Entry, bool, error) {
	ids, more, err := a.ListContent(ctx, space, after, limit)
	var es []storage.Entry
	for _, id := range ids {
		var i int
		fmt.Sscanf(id, "item-%d", &i)
		es = append(es, storage.Entry{ID: id, Size: int64(i), StorageClass: classOf(i)})
	}
	return es, more, err
}

func (a *archive) ObjectPrefix(space string) (string, string, error) {
	return "b", "pfx/" + space + "/", nil
}

// fakeChecker is an atrest.Checker in memory: one job per token.
type fakeChecker struct {
	mu       sync.Mutex
	specs    []atrest.Spec
	tokens   map[string]string
	status   map[string]atrest.Status
	results  map[string][]atrest.Result
	errs     map[string][]error // yielded after the results
	describe int
}

func newChecker() *fakeChecker {
	return &fakeChecker{tokens: map[string]string{}, status: map[string]atrest.Status{}, results: map[string][]atrest.Result{}, errs: map[string][]error{}}
}

func (c *fakeChecker) Submit(ctx context.Context, s atrest.Spec) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.specs = append(c.specs, s)
	if id, ok := c.tokens[s.Token]; ok {
		return id, nil
	}
	id := fmt.Sprintf("job-%d", len(c.tokens)+1)
	c.tokens[s.Token] = id
	c.status[id] = atrest.Status{ID: id, State: atrest.StateActive, Total: int64(len(s.Objects))}
	return id, nil
}

func (c *fakeChecker) Describe(ctx context.Context, id string) (atrest.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.describe++
	st, ok := c.status[id]
	if !ok {
		return atrest.Status{}, errors.New("no such job")
	}
	return st, nil
}

func (c *fakeChecker) Results(ctx context.Context, id string) iter.Seq2[atrest.Result, error] {
	return func(yield func(atrest.Result, error) bool) {
		c.mu.Lock()
		rs := c.results[id]
		c.mu.Unlock()
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
		for _, err := range c.errs[id] {
			if !yield(atrest.Result{}, err) {
				return
			}
		}
	}
}

func md5Of(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

// atRestEnv is newEnv with acme/1 an s3 store of 2500 items, 834 of
// them archived.
func atRestEnv(t *testing.T, c *fakeChecker, method stores.ArchivedMethod) (*env, *bit.Producer, *looping.Loop) {
	e := newEnv()
	e.reg.Accounts[0].Stores[0].Kind = storage.KindS3
	e.open = opener{"acme/1": {spaces: map[string]int{"photos": 2500}}, "acme/2": {spaces: map[string]int{}}}
	arch := &archive{listing: *e.open["acme/1"]}
	p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: archOpener{e.open, arch}, Logger: slogtest.New(t, slog.LevelInfo)}, BitLog: e.log,
		AtRest: &bit.AtRest{Checker: c, Log: e.log, Queue: e.bits, ReportBucket: "reports", ReportPrefix: "at-rest/",
			RoleARN: "arn:aws:iam::123456789012:role/mill-batch", Priority: 7, Clock: e.clk,
			Method: func(st *stores.Store) stores.ArchivedMethod { return method }}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, MaxQueueSize: 1 << 20, Frequency: looping.Frequency{N: 1, Unit: looping.Days},
		Clock: e.clk, Logger: slogtest.New(t, slog.LevelWarn), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	return e, p, l
}

type archOpener struct {
	opener
	arch *archive
}

func (o archOpener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	if account+"/"+storeID == "acme/1" {
		return o.arch, nil
	}
	return o.opener.Open(ctx, account, storeID)
}

func archivedIDs(n int) []string {
	var out []string
	for i := range n {
		if bit.ArchivedClass(classOf(i)) {
			out = append(out, itemID(i))
		}
	}
	return out
}

// TestAtRestRoute: archived items get no BIT task from the listing but
// one at-rest job per space and run (MD5, the run's token, the settings),
// recorded before the listing's count, which counts them too; Follow
// leaves a running job alone, ingests a complete one's report and queues
// one BIT naming the job per reported object, records an ERROR for an
// object the report left out, ignores lines of objects the job does not
// list, and does nothing more on the next invocation.
func TestAtRestRoute(t *testing.T) {
	c := newChecker()
	e, p, l := atRestEnv(t, c, stores.ArchivedComputeChecksum)
	ctx := t.Context()
	sum, err := l.Run(ctx)
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run: %+v %v", sum, err)
	}
	arch := archivedIDs(2500)
	isArch := map[string]bool{}
	for _, id := range arch {
		isArch[id] = true
	}
	bits := decodeAll(t, e.bits)
	if len(bits) != 2500-len(arch) {
		t.Fatalf("%d BITs, want %d (the hot items)", len(bits), 2500-len(arch))
	}
	for _, tk := range bits {
		b, _ := task.BitFrom(tk)
		if isArch[b.ContentID] || b.AtRestJob != "" {
			t.Fatalf("BIT %+v: an archived item read, or a job named by the listing", b)
		}
	}
	if len(c.specs) != 1 {
		t.Fatalf("%d jobs submitted, want 1", len(c.specs))
	}
	s := c.specs[0]
	k := bitlog.AtRestKey{RunID: sum.RunID, Account: "acme", StoreID: "1", SpaceID: "photos"}
	if s.Algorithm != atrest.MD5 || s.Token != bit.AtRestToken(k) || s.ReportBucket != "reports" ||
		s.ReportPrefix != "at-rest/"+sum.RunID+"/acme/1/photos/" || s.RoleARN == "" || s.Priority != 7 || len(s.Objects) != len(arch) {
		t.Fatalf("spec %+v (objects %d), want MD5, the run's token, the settings and %d objects", s, len(s.Objects), len(arch))
	}
	for i, o := range s.Objects {
		if o != (atrest.Object{Bucket: "b", Key: "pfx/photos/" + arch[i]}) {
			t.Fatalf("manifest object %d = %+v, want %s", i, o, arch[i])
		}
	}
	rs, err := e.log.RunSpace(ctx, sum.RunID, "acme", "1", "photos")
	if err != nil || rs.Expected != 2500 {
		t.Fatalf("run record %+v %v, want 2500 listed (archived included)", rs, err)
	}
	j, err := e.log.AtRestJob(ctx, k)
	if err != nil || j.JobID != "job-1" || j.State != bitlog.AtRestSubmitted || j.Objects != int64(len(arch)) {
		t.Fatalf("job record %+v %v", j, err)
	}

	// Running: nothing happens.
	if err := p.Follow(ctx); err != nil || c.describe != 1 || len(decodeAll(t, e.bits)) != 0 {
		t.Fatalf("follow a running job: %v, %d describes", err, c.describe)
	}
	// Complete: one line per object but the last; one failed; one foreign.
	var results []atrest.Result
	for i, id := range arch[:len(arch)-1] {
		r := atrest.Result{Object: atrest.Object{Bucket: "b", Key: "pfx/photos/" + id}, OK: true, Algorithm: atrest.MD5, Checksum: strings.ToUpper(md5Of(id))}
		if i == 5 {
			r = atrest.Result{Object: r.Object, Error: "InternalError: try again"}
		}
		results = append(results, r)
	}
	results = append(results,
		atrest.Result{Object: atrest.Object{Bucket: "other", Key: "pfx/photos/item-00001"}, OK: true, Algorithm: atrest.MD5, Checksum: md5Of("x")},
		atrest.Result{Object: atrest.Object{Bucket: "b", Key: "pfx/photos/not-listed"}, OK: true, Algorithm: atrest.MD5, Checksum: md5Of("x")})
	c.results["job-1"] = results
	c.status["job-1"] = atrest.Status{ID: "job-1", State: atrest.StateComplete}
	if err := p.Follow(ctx); err != nil {
		t.Fatal(err)
	}
	queued := decodeAll(t, e.bits)
	if len(queued) != len(arch)-1 {
		t.Fatalf("%d BITs queued for the job, want %d", len(queued), len(arch)-1)
	}
	for _, tk := range queued {
		b, err := task.BitFrom(tk)
		if err != nil || b.AtRestJob != "job-1" || b.RunID != sum.RunID || !isArch[b.ContentID] {
			t.Fatalf("job BIT %+v %v", b, err)
		}
	}
	if o, err := e.log.AtRestObject(ctx, k, arch[0]); err != nil || !o.OK || o.Checksum != md5Of(arch[0]) {
		t.Errorf("object %s: %+v %v, want its MD5 in lower case", arch[0], o, err)
	}
	if o, err := e.log.AtRestObject(ctx, k, arch[5]); err != nil || o.OK || o.Error != "InternalError: try again" {
		t.Errorf("object %s: %+v %v, want the provider's error", arch[5], o, err)
	}
	if _, err := e.log.AtRestObject(ctx, k, "not-listed"); !errors.Is(err, bitlog.ErrNoAtRestJob) {
		t.Errorf("a line for an object the job does not list was recorded: %v", err)
	}
	last := arch[len(arch)-1]
	rows, _, err := e.log.Results(ctx, bitlog.Filter{RunID: sum.RunID, ContentID: last})
	if err != nil || len(rows) != 1 || rows[0].Result != bitlog.ResultError || !strings.Contains(rows[0].Details, "no line for the item") {
		t.Fatalf("the object the report left out: %+v %v, want an ERROR row", rows, err)
	}
	if j, _ := e.log.AtRestJob(ctx, k); j.State != bitlog.AtRestQueued {
		t.Fatalf("job %+v, want queued", j)
	}
	describes := c.describe
	if err := p.Follow(ctx); err != nil || c.describe != describes || len(decodeAll(t, e.bits)) != 0 {
		t.Fatalf("follow a queued job again: %v, %d describes", err, c.describe-describes)
	}
}

// TestAtRestRepeatedBite: the last bite asked for again (a crash after it
// submitted) makes no second job and lists the same count.
func TestAtRestRepeatedBite(t *testing.T) {
	c := newChecker()
	e, p, _ := atRestEnv(t, c, stores.ArchivedComputeChecksum)
	ctx := t.Context()
	run := looping.RunInfo{ID: "20260501T030000Z", Start: e.clk.Now()}
	ms, err := p.Morsels(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	var m looping.Morsel
	for _, x := range ms {
		if x.ID == "acme/1/photos" {
			m = x
		}
	}
	var biteRes looping.BiteResult
	emit := func(context.Context, ...*task.Task) error { return nil }
	for !biteRes.Done {
		before := m
		if biteRes, err = p.Bite(ctx, run, m, 1000, emit); err != nil {
			t.Fatal(err)
		}
		if biteRes.Done { // the last bite again
			if _, err := p.Bite(ctx, run, before, 1000, emit); err != nil {
				t.Fatal(err)
			}
		}
		m.Marker, m.Data = biteRes.Marker, biteRes.Data
	}
	if len(c.tokens) != 1 || len(c.specs) != 1 {
		t.Fatalf("%d jobs, %d submissions: a repeated bite made a second job", len(c.tokens), len(c.specs))
	}
	if rs, err := e.log.RunSpace(ctx, run.ID, "acme", "1", "photos"); err != nil || rs.Expected != 2500 {
		t.Fatalf("run record %+v %v", rs, err)
	}
}

// TestAtRestJobFailed: a failed job's objects become ERROR rows made by
// the producer (never checked), no BIT task is queued, the job is final.
func TestAtRestJobFailed(t *testing.T) {
	for _, state := range []atrest.State{atrest.StateFailed, atrest.StateCancelled} {
		t.Run(string(state), func(t *testing.T) {
			c := newChecker()
			e, p, l := atRestEnv(t, c, stores.ArchivedComputeChecksum)
			ctx := t.Context()
			sum, err := l.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			decodeAll(t, e.bits)
			c.status["job-1"] = atrest.Status{ID: "job-1", State: state, Reason: "AccessDenied: the role may not read the manifest"}
			if err := p.Follow(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(decodeAll(t, e.bits)); n != 0 {
				t.Fatalf("%d BITs queued for a %s job", n, state)
			}
			counts, err := e.log.Count(ctx, sum.RunID, "acme", "1", "photos")
			arch := archivedIDs(2500)
			if err != nil || counts.Error != int64(len(arch)) || counts.Total != counts.Error {
				t.Fatalf("counts %+v %v, want %d errors", counts, err, len(arch))
			}
			rows, _, _ := e.log.Results(ctx, bitlog.Filter{RunID: sum.RunID, ContentID: arch[0]})
			if len(rows) != 1 || !strings.HasPrefix(rows[0].Details, "compute-checksum job job-1 ") ||
				!strings.HasSuffix(rows[0].Details, ": AccessDenied: the role may not read the manifest") || rows[0].Result != bitlog.ResultError {
				t.Fatalf("row %+v", rows)
			}
			k := bitlog.AtRestKey{RunID: sum.RunID, Account: "acme", StoreID: "1", SpaceID: "photos"}
			if j, _ := e.log.AtRestJob(ctx, k); j.State != bitlog.AtRestFailed {
				t.Fatalf("job %+v, want failed", j)
			}
			if open, _ := e.log.OpenAtRestJobs(ctx); len(open) != 0 {
				t.Fatalf("open jobs %+v after the failure", open)
			}
		})
	}
}

// TestAtRestMethodNone: a store whose archived method is not
// compute-checksum gets a BIT task for every item, archived or not.
func TestAtRestMethodNone(t *testing.T) {
	for _, m := range []stores.ArchivedMethod{stores.ArchivedNone, stores.ArchivedRestore} {
		c := newChecker()
		e, _, l := atRestEnv(t, c, m)
		if _, err := l.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(decodeAll(t, e.bits)); n != 2500 || len(c.specs) != 0 {
			t.Fatalf("method %s: %d BITs, %d jobs; want 2500 and none", m, n, len(c.specs))
		}
	}
}

// TestAtRestFollowedEveryInvocation: the loop follows the jobs on an
// invocation whose run is not due.
func TestAtRestFollowedEveryInvocation(t *testing.T) {
	c := newChecker()
	e, _, l := atRestEnv(t, c, stores.ArchivedComputeChecksum)
	ctx := t.Context()
	if _, err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	decodeAll(t, e.bits)
	c.status["job-1"] = atrest.Status{ID: "job-1", State: atrest.StateComplete}
	for _, id := range archivedIDs(2500) {
		c.results["job-1"] = append(c.results["job-1"], atrest.Result{Object: atrest.Object{Bucket: "b", Key: "pfx/photos/" + id}, OK: true, Algorithm: atrest.MD5, Checksum: md5Of(id)})
	}
	sum, err := l.Run(ctx)
	if err != nil || sum.Stopped != looping.StopNotDue {
		t.Fatalf("second invocation: %+v %v, want not due", sum, err)
	}
	if n := len(decodeAll(t, e.bits)); n != len(archivedIDs(2500)) {
		t.Fatalf("%d BITs queued by the not-due invocation, want %d", n, len(archivedIDs(2500)))
	}
}

// TestAtRestReportErrors: a report line that yields no checksum is that
// object's error (an ERROR row through its BIT task); a report that cannot
// be read leaves the job submitted, to be read again next time.
func TestAtRestReportErrors(t *testing.T) {
	c := newChecker()
	e, p, l := atRestEnv(t, c, stores.ArchivedComputeChecksum)
	ctx := t.Context()
	sum, err := l.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	decodeAll(t, e.bits)
	arch := archivedIDs(2500)
	k := bitlog.AtRestKey{RunID: sum.RunID, Account: "acme", StoreID: "1", SpaceID: "photos"}
	c.status["job-1"] = atrest.Status{ID: "job-1", State: atrest.StateComplete}
	c.errs["job-1"] = []error{errors.New("report unreadable: connection reset")}
	if err := p.Follow(ctx); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("follow with an unreadable report: %v", err)
	}
	if j, _ := e.log.AtRestJob(ctx, k); j.State != bitlog.AtRestSubmitted || len(decodeAll(t, e.bits)) != 0 {
		t.Fatalf("job %+v after an unreadable report, want still submitted, nothing queued", j)
	}
	for _, id := range arch[1:] {
		c.results["job-1"] = append(c.results["job-1"], atrest.Result{Object: atrest.Object{Bucket: "b", Key: "pfx/photos/" + id}, OK: true, Algorithm: atrest.MD5, Checksum: md5Of(id)})
	}
	c.errs["job-1"] = []error{
		&s3batch.LineError{Object: atrest.Object{Bucket: "b", Key: "pfx/photos/" + arch[0]}, Err: errors.New("the completion report has no line for it")},
		&s3batch.LineError{File: "s3://reports/x.csv", Line: 7, Err: errors.New("not CSV")},
	}
	if err := p.Follow(ctx); err != nil {
		t.Fatal(err)
	}
	if o, err := e.log.AtRestObject(ctx, k, arch[0]); err != nil || !o.Reported || o.OK || o.Error != "the completion report has no line for it" {
		t.Fatalf("object %s: %+v %v", arch[0], o, err)
	}
	if n := len(decodeAll(t, e.bits)); n != len(arch) {
		t.Fatalf("%d BITs, want %d", n, len(arch))
	}
}
