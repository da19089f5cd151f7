package bitlogtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testAtRest: the producer's record of an at-rest job. Objects are
// recorded while the job lists (a repeated object replaces its record);
// the job moves forward only, keeps its job ID, and its manifest closes
// when it is submitted; results are recorded for listed objects only;
// open jobs are the submitted and ingested ones; keys do not leak.
func testAtRest(t *testing.T, l bitlog.Log) {
	a, ok := l.(bitlog.AtRestJobs)
	if !ok {
		t.Fatalf("%T does not implement bitlog.AtRestJobs", l)
	}
	ctx := context.Background()
	k := bitlog.AtRestKey{RunID: "20240305T140000Z", Account: "acme", StoreID: "1", SpaceID: "photos"}
	if _, err := a.AtRestJob(ctx, k); !errors.Is(err, bitlog.ErrNoAtRestJob) {
		t.Fatalf("unknown job: %v, want ErrNoAtRestJob", err)
	}
	if _, err := a.AtRestObject(ctx, k, "x"); !errors.Is(err, bitlog.ErrNoAtRestJob) {
		t.Fatalf("unknown object: %v, want ErrNoAtRestJob", err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "j1", State: bitlog.AtRestSubmitted}); !errors.Is(err, bitlog.ErrNoAtRestJob) {
		t.Fatalf("set an unrecorded job: %v, want ErrNoAtRestJob", err)
	}
	var objs []bitlog.AtRestObject
	for i := range 5 {
		objs = append(objs, bitlog.AtRestObject{ContentID: fmt.Sprintf("item-%d", i), Size: int64(i), StorageClass: "GLACIER"})
	}
	if err := a.AddAtRestObjects(ctx, k, objs[:3]); err != nil {
		t.Fatal(err)
	}
	if err := a.AddAtRestObjects(ctx, k, objs[2:]); err != nil { // item-2 again
		t.Fatal(err)
	}
	j, err := a.AtRestJob(ctx, k)
	if err != nil || j.State != bitlog.AtRestListing || j.JobID != "" || j.AtRestKey != k {
		t.Fatalf("listing job: %+v %v", j, err)
	}
	if open, err := a.OpenAtRestJobs(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open jobs while listing: %+v %v, want none", open, err)
	}
	page, more, err := a.AtRestObjects(ctx, k, "", 2)
	if err != nil || !more || len(page) != 2 || page[0].ContentID != "item-0" || page[1].ContentID != "item-1" {
		t.Fatalf("first page: %+v %t %v", page, more, err)
	}
	page, more, err = a.AtRestObjects(ctx, k, "item-1", 10)
	if err != nil || more || len(page) != 3 || page[2] != (bitlog.AtRestObject{ContentID: "item-4", Size: 4, StorageClass: "GLACIER"}) {
		t.Fatalf("second page: %+v %t %v", page, more, err)
	}

	// Invalid moves and records write nothing.
	for _, bad := range []bitlog.AtRestJob{
		{AtRestKey: k, State: bitlog.AtRestSubmitted}, // no job ID
		{AtRestKey: k, JobID: "j1", State: "done"},    // unknown state
		{AtRestKey: k, JobID: "j1", State: bitlog.AtRestSubmitted, Objects: -1},
		{AtRestKey: bitlog.AtRestKey{Account: "acme", StoreID: "1", SpaceID: "photos"}, JobID: "j1", State: bitlog.AtRestSubmitted},
	} {
		if err := a.SetAtRestJob(ctx, bad); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("SetAtRestJob(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	if err := a.AddAtRestObjects(ctx, k, []bitlog.AtRestObject{{ContentID: ""}}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("an object without an ID: %v, want ErrInvalid", err)
	}

	sub := bitlog.AtRestJob{AtRestKey: k, JobID: "j1", State: bitlog.AtRestSubmitted, Objects: 5, Submitted: t0}
	if err := a.SetAtRestJob(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := a.AddAtRestObjects(ctx, k, objs[:1]); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("an object added to a submitted job: %v, want ErrInvalid", err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "j2", State: bitlog.AtRestSubmitted, Objects: 5}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("the job ID changed: %v, want ErrInvalid", err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, State: bitlog.AtRestListing}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("a job moved back: %v, want ErrInvalid", err)
	}
	open, err := a.OpenAtRestJobs(ctx)
	if err != nil || len(open) != 1 || open[0].JobID != "j1" || open[0].State != bitlog.AtRestSubmitted || !open[0].Submitted.Equal(t0) || open[0].Objects != 5 {
		t.Fatalf("open jobs: %+v %v, want j1 submitted", open, err)
	}

	n, err := a.RecordAtRestResults(ctx, k, []bitlog.AtRestObject{
		{ContentID: "item-0", OK: true, Checksum: "0cc175b9c0f1b6a831c399e269772661"},
		{ContentID: "item-1", Error: "AccessDenied: no"},
		{ContentID: "not-listed", OK: true, Checksum: "d41d8cd98f00b204e9800998ecf8427e"},
	})
	if err != nil || n != 2 {
		t.Fatalf("results: %d %v, want 2 recorded", n, err)
	}
	if _, err := a.AtRestObject(ctx, k, "not-listed"); !errors.Is(err, bitlog.ErrNoAtRestJob) {
		t.Errorf("a result for an object the job does not list made a record: %v", err)
	}
	o, err := a.AtRestObject(ctx, k, "item-0")
	if err != nil || !o.Reported || !o.OK || o.Checksum != "0cc175b9c0f1b6a831c399e269772661" || o.Size != 0 || o.StorageClass != "GLACIER" {
		t.Fatalf("item-0: %+v %v", o, err)
	}
	o, err = a.AtRestObject(ctx, k, "item-1")
	if err != nil || !o.Reported || o.OK || o.Error != "AccessDenied: no" || o.Size != 1 {
		t.Fatalf("item-1: %+v %v", o, err)
	}
	if o, err := a.AtRestObject(ctx, k, "item-2"); err != nil || o.Reported {
		t.Fatalf("item-2 without a result: %+v %v", o, err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "j1", State: bitlog.AtRestIngested, Objects: 5}); err != nil {
		t.Fatal(err)
	}
	if j, err := a.AtRestJob(ctx, k); err != nil || j.State != bitlog.AtRestIngested || !j.Submitted.Equal(t0) {
		t.Fatalf("ingested: %+v %v, want the submission time kept", j, err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "j1", State: bitlog.AtRestQueued, Objects: 5}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: "j1", State: bitlog.AtRestFailed, Objects: 5}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("a final state changed: %v, want ErrInvalid", err)
	}
	if open, err := a.OpenAtRestJobs(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open jobs after queueing: %+v %v, want none", open, err)
	}

	// Another run, account, store or space is another job.
	for _, f := range [][4]string{{"r2", "acme", "1", "photos"}, {k.RunID, "other", "1", "photos"},
		{k.RunID, "acme", "2", "photos"}, {k.RunID, "acme", "1", "photo"}} {
		other := bitlog.AtRestKey{RunID: f[0], Account: f[1], StoreID: f[2], SpaceID: f[3]}
		if _, err := a.AtRestJob(ctx, other); !errors.Is(err, bitlog.ErrNoAtRestJob) {
			t.Errorf("AtRestJob(%s): %v, want ErrNoAtRestJob", other, err)
		}
		if _, err := a.AtRestObject(ctx, other, "item-0"); !errors.Is(err, bitlog.ErrNoAtRestJob) {
			t.Errorf("AtRestObject(%s): %v, want ErrNoAtRestJob", other, err)
		}
	}
	// A failed job is final and not open.
	k2 := bitlog.AtRestKey{RunID: "r2", Account: "acme", StoreID: "1", SpaceID: "photos"}
	if err := a.AddAtRestObjects(ctx, k2, objs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k2, JobID: "j9", State: bitlog.AtRestFailed, Objects: 1, Reason: "cancelled by a person"}); err != nil {
		t.Fatal(err)
	}
	if j, err := a.AtRestJob(ctx, k2); err != nil || j.State != bitlog.AtRestFailed || j.Reason != "cancelled by a person" {
		t.Fatalf("failed job: %+v %v", j, err)
	}
}
