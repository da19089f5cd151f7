package bitlogtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testRunSpaces: the producer's record of a space in a run. Unknown until
// started; a start is kept by a repeated start; a finish sets the count
// and the time and keeps the start; a repeated finish replaces the count;
// a later start does not undo a finish; keys do not leak into each other;
// invalid records are refused.
func testRunSpaces(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	const run = "20240305T140000Z"
	get := func(run, space string) (bitlog.RunSpace, error) {
		t.Helper()
		return l.RunSpace(ctx, run, "acme", "1", space)
	}
	if _, err := get(run, "photos"); !errors.Is(err, bitlog.ErrNoRun) {
		t.Fatalf("unknown run space: %v, want ErrNoRun", err)
	}
	s := bitlog.RunSpace{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", Started: t0}
	if err := l.StartSpace(ctx, s); err != nil {
		t.Fatal(err)
	}
	again := s
	again.Started = t0.Add(time.Hour)
	if err := l.StartSpace(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, err := get(run, "photos")
	if err != nil || got.Done() || !got.Started.Equal(t0) || got.Expected != 0 {
		t.Fatalf("started: %+v %v, want started at %s, not listed", got, err, t0)
	}
	fin := s
	fin.Started, fin.Listed, fin.Expected = t0.Add(2*time.Hour), t0.Add(time.Minute), 1234
	if err := l.FinishSpace(ctx, fin); err != nil {
		t.Fatal(err)
	}
	got, err = get(run, "photos")
	if err != nil || !got.Done() || !got.Listed.Equal(t0.Add(time.Minute)) || got.Expected != 1234 || !got.Started.Equal(t0) {
		t.Fatalf("finished: %+v %v, want 1234 listed at %s, started kept", got, err, t0.Add(time.Minute))
	}
	if err := l.StartSpace(ctx, s); err != nil { // a repeated first bite
		t.Fatal(err)
	}
	fin.Expected, fin.Listed = 1200, t0.Add(3*time.Minute) // a repeated last bite
	if err := l.FinishSpace(ctx, fin); err != nil {
		t.Fatal(err)
	}
	if got, err = get(run, "photos"); err != nil || !got.Done() || got.Expected != 1200 || !got.Listed.Equal(fin.Listed) {
		t.Fatalf("after a repeated start and finish: %+v %v, want 1200 listed", got, err)
	}
	if got.RunID != run || got.Account != "acme" || got.StoreID != "1" || got.SpaceID != "photos" || got.Started.Location() != time.UTC {
		t.Errorf("record %+v: key or time zone lost", got)
	}

	// A finish without a start makes the record; zero times are now; an
	// empty space lists 0 items.
	before := time.Now().Add(-time.Minute)
	if err := l.FinishSpace(ctx, bitlog.RunSpace{RunID: run, Account: "acme", StoreID: "1", SpaceID: "empty"}); err != nil {
		t.Fatal(err)
	}
	got, err = get(run, "empty")
	if err != nil || !got.Done() || got.Expected != 0 || got.Started.Before(before) || got.Listed.Before(before) {
		t.Fatalf("finished without a start: %+v %v", got, err)
	}

	// Other runs, accounts, stores and spaces are other records.
	for _, k := range [][4]string{{"20240305T140001Z", "acme", "1", "photos"}, {run, "other", "1", "photos"},
		{run, "acme", "2", "photos"}, {run, "acme", "1", "photo"}, {"", "acme", "1", "photos"}} {
		if _, err := l.RunSpace(ctx, k[0], k[1], k[2], k[3]); !errors.Is(err, bitlog.ErrNoRun) {
			t.Errorf("RunSpace%q: %v, want ErrNoRun", k, err)
		}
	}

	// Invalid records write nothing.
	for _, bad := range []bitlog.RunSpace{
		{Account: "acme", StoreID: "1", SpaceID: "x"},
		{RunID: run, StoreID: "1", SpaceID: "x"},
		{RunID: run, Account: "acme", SpaceID: "x"},
		{RunID: run, Account: "acme", StoreID: "1"},
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "x", Expected: -1},
	} {
		if err := l.StartSpace(ctx, bad); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("StartSpace(%+v): %v, want ErrInvalid", bad, err)
		}
		if err := l.FinishSpace(ctx, bad); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("FinishSpace(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := get(run, "x"); !errors.Is(err, bitlog.ErrNoRun) {
		t.Errorf("an invalid record was written: %v", err)
	}
}
