package bit_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// glacier makes a store's items archived (GLACIER, modified at T0) and
// counts the requests: a Get of an archived item is what the at-rest
// route must never send.
type glacier struct {
	storage.Provider
	heads, gets *atomic.Int64
}

func (g glacier) Head(ctx context.Context, sp, id string) (*storage.Info, error) {
	g.heads.Add(1)
	in, err := g.Provider.Head(ctx, sp, id)
	if err == nil {
		in.StorageClass, in.Archived, in.Modified = "GLACIER", true, bt.T0
	}
	return in, err
}

func (g glacier) Get(ctx context.Context, sp, id string) (io.ReadCloser, *storage.Info, error) {
	g.gets.Add(1)
	return nil, nil, storage.ErrArchived
}

func (g glacier) GetRange(ctx context.Context, sp, id string, off, n int64, rev string) (io.ReadCloser, *storage.Info, error) {
	g.gets.Add(1)
	return nil, nil, storage.ErrArchived
}

type counts struct{ heads, gets atomic.Int64 }

func archiveStore1(e *bt.Env) *counts {
	c := &counts{}
	e.Wrap("1", func(p storage.Provider) storage.Provider { return glacier{Provider: p, heads: &c.heads, gets: &c.gets} })
	return c
}

var atRestKey = bitlog.AtRestKey{RunID: bt.RunID, Account: bt.Account, StoreID: "1", SpaceID: bt.Space}

// recordJob records the run's job of the space as the producer does:
// listed, submitted at T0+1m, its report ingested with result r for the
// item.
func recordJob(t *testing.T, e *bt.Env, jobID string, r bitlog.AtRestObject) {
	t.Helper()
	ctx := context.Background()
	if err := e.BitLog.AddAtRestObjects(ctx, atRestKey, []bitlog.AtRestObject{{ContentID: bt.Item, Size: int64(len(bt.Good)), StorageClass: "GLACIER"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.BitLog.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: atRestKey, JobID: jobID, State: bitlog.AtRestSubmitted, Objects: 1, Submitted: bt.T0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	r.ContentID = bt.Item
	if _, err := e.BitLog.RecordAtRestResults(ctx, atRestKey, []bitlog.AtRestObject{r}); err != nil {
		t.Fatal(err)
	}
	if err := e.BitLog.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: atRestKey, JobID: jobID, State: bitlog.AtRestIngested, Objects: 1}); err != nil {
		t.Fatal(err)
	}
}

func atRestTask(job string) *task.Task {
	return task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID, AtRestJob: job}.Task()
}

// TestAtRestHealthy: C is the job's computed MD5; case 1 with no Get; the
// row says at rest, the bytes computed and archived.
func TestAtRestHealthy(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	c := archiveStore1(e)
	recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.GoodMD5})
	if err := e.Processor(nil).Handle(t.Context(), atRestTask("job-1")); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r == nil || r.Result != bitlog.ResultSuccess || r.Case != 1 || r.ContentChecksum != bt.GoodMD5 || r.StorageChecksum != bt.GoodMD5 ||
		r.Method != bitlog.MethodAtRest || r.Bytes != int64(len(bt.Good)) || !r.Archived || !strings.Contains(r.Details, "computed at rest by compute-checksum job job-1") {
		t.Fatalf("row %+v", r)
	}
	if c.gets.Load() != 0 {
		t.Fatalf("%d GETs of an archived item", c.gets.Load())
	}
}

// TestAtRestSour: the provider computed another MD5 than every record:
// case 2, FAILURE at rest, a resolvable BIT_ERROR carrying C — the same
// decision as for bytes read.
func TestAtRestSour(t *testing.T) {
	e := bt.New(t)
	healthy(e, true)
	c := archiveStore1(e)
	recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
	if err := e.Processor(nil).Handle(t.Context(), atRestTask("job-1")); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r.Result != bitlog.ResultFailure || r.Case != 2 || r.ContentChecksum != bt.SourMD5 || r.Method != bitlog.MethodAtRest {
		t.Fatalf("row %+v", r)
	}
	bes := e.BitErrors()
	if len(bes) != 1 || bes[0].Case != 2 || !bes[0].InternallyResolvable || bes[0].ContentChecksum != bt.SourMD5 {
		t.Fatalf("BIT_ERRORs %+v", bes)
	}
	if c.gets.Load() != 0 {
		t.Fatalf("%d GETs of an archived item", c.gets.Load())
	}
}

// TestAtRestProviderError: a report line the provider failed is an ERROR
// row with its error, made without looking at the item.
func TestAtRestProviderError(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	c := archiveStore1(e)
	recordJob(t, e, "job-1", bitlog.AtRestObject{Error: "AccessDenied: Access Denied"})
	if err := e.Processor(nil).Handle(t.Context(), atRestTask("job-1")); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r.Result != bitlog.ResultError || r.Case != 0 || r.ContentChecksum != "" ||
		r.Details != "compute-checksum job job-1 could not compute the checksum: AccessDenied: Access Denied" {
		t.Fatalf("row %+v", r)
	}
	if c.gets.Load()+c.heads.Load() != 0 || len(e.BitErrors()) != 0 {
		t.Fatalf("%d requests, %d BIT_ERRORs for a failed line", c.gets.Load()+c.heads.Load(), len(e.BitErrors()))
	}
}

// TestAtRestChangedSinceJob: an item rewritten after the job was created
// is not judged by the job's C: it is checked as an unread item.
func TestAtRestChangedSinceJob(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	c := archiveStore1(e)
	recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
	// The item was modified after the job was created (T0+1m).
	e.Wrap("1", func(p storage.Provider) storage.Provider {
		return modifiedAt{glacier{Provider: p, heads: &c.heads, gets: &c.gets}, bt.T0.Add(time.Hour)}
	})
	if err := e.Processor(nil).Handle(t.Context(), atRestTask("job-1")); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r.Result != bitlog.ResultSuccess || r.ContentChecksum != "" || r.Method == bitlog.MethodAtRest || !strings.Contains(r.Details, "not used: the item changed") {
		t.Fatalf("row %+v", r)
	}
	if c.gets.Load() != 0 {
		t.Fatalf("%d GETs", c.gets.Load())
	}
}

type modifiedAt struct {
	glacier
	at time.Time
}

func (m modifiedAt) Head(ctx context.Context, sp, id string) (*storage.Info, error) {
	in, err := m.glacier.Head(ctx, sp, id)
	if err == nil {
		in.Modified = m.at
	}
	return in, err
}

// TestAtRestForgedReference: a BIT task naming a job the producer's
// record does not hold for it is permanent, records nothing and touches
// no store.
func TestAtRestForgedReference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *bt.Env)
		tk    *task.Task
	}{
		{"no job recorded", func(t *testing.T, e *bt.Env) {}, atRestTask("job-1")},
		{"another job", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
		}, atRestTask("job-2")},
		{"no run", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
		}, task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, AtRestJob: "job-1"}.Task()},
		{"another run", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
		}, task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: "run2", AtRestJob: "job-1"}.Task()},
		{"another space", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
		}, task.Bit{Account: bt.Account, StoreID: "1", SpaceID: "other", ContentID: bt.Item, RunID: bt.RunID, AtRestJob: "job-1"}.Task()},
		{"another item", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
		}, task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: "other", RunID: bt.RunID, AtRestJob: "job-1"}.Task()},
		{"job not ingested", func(t *testing.T, e *bt.Env) {
			ctx := context.Background()
			if err := e.BitLog.AddAtRestObjects(ctx, atRestKey, []bitlog.AtRestObject{{ContentID: bt.Item}}); err != nil {
				t.Fatal(err)
			}
			if err := e.BitLog.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: atRestKey, JobID: "job-1", State: bitlog.AtRestSubmitted, Objects: 1}); err != nil {
				t.Fatal(err)
			}
		}, atRestTask("job-1")},
		{"no line in the report", func(t *testing.T, e *bt.Env) {
			recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
			if err := e.BitLog.AddAtRestObjects(context.Background(), atRestKey, nil); err == nil {
				t.Fatal("the manifest of an ingested job grew")
			}
		}, task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: "unreported", RunID: bt.RunID, AtRestJob: "job-1"}.Task()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := bt.New(t)
			healthy(e, true)
			c := archiveStore1(e)
			tc.setup(t, e)
			err := e.Processor(nil).Handle(t.Context(), tc.tk)
			if !processors.IsPermanent(err) || !errors.Is(err, bit.ErrAtRestRef) {
				t.Fatalf("Handle: %v, want a permanent ErrAtRestRef", err)
			}
			rows, _, _ := e.BitLog.Results(context.Background(), bitlog.Filter{})
			if len(rows) != 0 || len(e.BitErrors()) != 0 || c.heads.Load()+c.gets.Load() != 0 {
				t.Fatalf("a forged reference recorded %d rows, sent %d BIT_ERRORs, made %d requests", len(rows), len(e.BitErrors()), c.heads.Load()+c.gets.Load())
			}
		})
	}
}

// TestRecheckOfArchivedNoGet: a re-check (after a repair) heads first and
// never GETs an archived item; the bit-error processor's observer
// (HeadFirst) neither.
func TestRecheckOfArchivedNoGet(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	c := archiveStore1(e)
	tk := task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID,
		Extra: map[string]string{bit.KeyRecheckOf: "case 2: repaired from store 2"}}.Task()
	if err := e.Processor(nil).Handle(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if r := e.Row(); r.Result != bitlog.ResultSuccess || r.ContentChecksum != "" {
		t.Fatalf("row %+v", r)
	}
	ob := &bit.Observer{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit, HeadFirst: true}
	if _, err := ob.Observe(t.Context(), bt.Account, "1", bt.Space, bt.Item); err != nil {
		t.Fatal(err)
	}
	if c.gets.Load() != 0 {
		t.Fatalf("%d GETs of an archived item", c.gets.Load())
	}
}

// TestObserveRunUsesTheJob: the bit-error processor's look at an archived
// item of a run takes C from the run's job, as the check did, so it
// observes the case the check found, without a GET.
func TestObserveRunUsesTheJob(t *testing.T) {
	e := bt.New(t)
	healthy(e, true)
	c := archiveStore1(e)
	recordJob(t, e, "job-1", bitlog.AtRestObject{OK: true, Checksum: bt.SourMD5})
	ob := &bit.Observer{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit, HeadFirst: true, AtRest: e.BitLog}
	o, err := ob.ObserveRun(t.Context(), bt.Account, "1", bt.Space, bt.Item, bt.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Case() != 2 || o.Sums.Content != bt.SourMD5 || !o.CopyDiffers(bt.GoodMD5) || c.gets.Load() != 0 {
		t.Fatalf("case %d, C %q, %d GETs; want case 2 from the job's C", o.Case(), o.Sums.Content, c.gets.Load())
	}
	// Another run has no job: C is N/A.
	o, err = ob.ObserveRun(t.Context(), bt.Account, "1", bt.Space, bt.Item, "run2")
	if err != nil || o.Sums.ContentRead || c.gets.Load() != 0 {
		t.Fatalf("another run: %+v %v, %d GETs", o.Sums, err, c.gets.Load())
	}
}
