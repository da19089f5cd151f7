package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/blob/dirblob"
)

// TestAppendVerifyProve: batches of different sizes (crossing tile
// boundaries, leaving partial tiles) verify, and every event's proof checks
// with only the verifier key.
func TestAppendVerifyProve(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	b := dirblob.New(t.TempDir(), nil)
	l, err := Open(ctx, b, skey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, size := range []int{1, 254, 2, 600, 300} {
		res, err := l.Append(ctx, fixityEvents(n, size))
		if err != nil {
			t.Fatal(err)
		}
		n += size
		if res.Appended != size || res.Checkpoint.Size != int64(n) {
			t.Fatalf("append %d: %+v, want %d appended, size %d", size, res, size, n)
		}
	}
	r := mustVerify(t, b, v)
	if r.Checkpoints != 5 || r.Latest.Size != int64(n) || r.Leaves != int64(n) {
		t.Fatalf("report: %d checkpoints, size %d, %d leaves; want 5, %d, %d", r.Checkpoints, r.Latest.Size, r.Leaves, n, n)
	}
	for _, i := range []int{0, 1, 255, 256, 257, 700, n - 1} {
		want := fixityEvent(i)
		p, err := Prove(ctx, b, v, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		file, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		e, cp, err := CheckProof(file, v)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if e.ID != want.ID || e.Object != want.Object || p.Index != int64(i) || cp.Size != int64(n) {
			t.Fatalf("event %d: proof of %s at %d in %d", i, e.ID, p.Index, cp.Size)
		}
	}
	if _, err := Prove(ctx, b, v, "no-such-event"); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("proof of a missing event: %v, want ErrNoEvent", err)
	}
}

// TestProofTampered: a proof whose event, index, hashes or checkpoint was
// changed, or checked with another key, fails.
func TestProofTampered(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	b := dirblob.New(t.TempDir(), nil)
	l, _ := Open(ctx, b, skey, Options{})
	if _, err := l.Append(ctx, fixityEvents(0, 300)); err != nil {
		t.Fatal(err)
	}
	p, err := Prove(ctx, b, v, fixityEvent(42).ID)
	if err != nil {
		t.Fatal(err)
	}
	other := fixityEvent(43)
	otherBytes, _ := other.Canonical()
	_, otherV := testKey(t)
	for name, c := range map[string]struct {
		mod func(p *Proof)
		v   func() any
	}{
		"event swapped": {mod: func(p *Proof) { p.Event = string(otherBytes) }},
		"index moved":   {mod: func(p *Proof) { p.Index++ }},
		"hash changed":  {mod: func(p *Proof) { p.Hashes[0] = p.Hashes[1] }},
		"hash dropped":  {mod: func(p *Proof) { p.Hashes = p.Hashes[1:] }},
		"checkpoint":    {mod: func(p *Proof) { p.Checkpoint = p.Checkpoint[:len(p.Checkpoint)-10] + "AAAAAAAAA\n" }},
		"format":        {mod: func(p *Proof) { p.Format = "v0" }},
		"other key":     {mod: func(*Proof) {}, v: func() any { return otherV }},
	} {
		q := *p
		q.Hashes = slices.Clone(p.Hashes)
		c.mod(&q)
		file, _ := json.Marshal(q)
		key := v
		if c.v != nil {
			key = otherV
		}
		if _, _, err := CheckProof(file, key); err == nil {
			t.Errorf("%s: the proof checked", name)
		}
	}
	file, _ := json.Marshal(p)
	if _, _, err := CheckProof(append(file, []byte(`{}`)...), v); err == nil {
		t.Error("trailing data: the proof checked")
	}
}

// TestAppendIdempotent: an event appended again (alone, in a later batch,
// twice in one batch, or after the log reopened) is kept once; one with
// its ID but other bytes is a conflict, also dropped.
func TestAppendIdempotent(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	b := dirblob.New(t.TempDir(), nil)
	l, _ := Open(ctx, b, skey, Options{})
	batch := fixityEvents(0, 10)
	batch = append(batch, fixityEvent(3))
	res, err := l.Append(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 10 || !slices.Equal(res.Duplicates, []string{fixityEvent(3).ID}) {
		t.Fatalf("first batch: %+v", res)
	}
	l2, err := Open(ctx, b, skey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changed := fixityEvent(5)
	changed.Outcome = Failure
	res, err = l2.Append(ctx, append(fixityEvents(8, 4), changed))
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 2 || len(res.Duplicates) != 2 || !slices.Equal(res.Conflicts, []string{changed.ID}) || res.Checkpoint.Size != 12 {
		t.Fatalf("second batch: appended %d, duplicates %v, conflicts %v, size %d", res.Appended, res.Duplicates, res.Conflicts, res.Checkpoint.Size)
	}
	res, err = l2.Append(ctx, fixityEvents(0, 12))
	if err != nil || res.Appended != 0 || res.Checkpoint.Size != 12 {
		t.Fatalf("all again: %+v, %v", res, err)
	}
	mustVerify(t, b, v)
	if got := leafIDs(t, b, v); len(got) != 12 {
		t.Fatalf("%d leaves, want 12", len(got))
	}
}

// TestAppendInvalidWritesNothing: a batch with one invalid event fails
// whole and writes nothing.
func TestAppendInvalidWritesNothing(t *testing.T) {
	ctx := context.Background()
	skey, _ := testKey(t)
	b := dirblob.New(t.TempDir(), nil)
	l, _ := Open(ctx, b, skey, Options{})
	bad := fixityEvent(2)
	bad.Fixity.Digest = "not hex"
	if _, err := l.Append(ctx, append(fixityEvents(0, 2), bad)); err == nil {
		t.Fatal("append of an invalid event succeeded")
	}
	if keys, _ := b.List(ctx, ""); len(keys) != 0 {
		t.Fatalf("wrote %v", keys)
	}
}

// TestCrashBetweenTilesAndCheckpoint: a writer that dies at any write of a
// batch (before or after the write lands) loses nothing and doubles
// nothing when a new writer opens the log and appends the batch again.
func TestCrashBetweenTilesAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	first, second := fixityEvents(0, 300), fixityEvents(300, 500)
	// The puts of the second batch: hash and data tiles, history, latest.
	probe := &faultyBlobs{Store: dirblob.New(t.TempDir(), nil), failAt: 1 << 30}
	pl, _ := Open(ctx, probe, skey, Options{Parallel: 1})
	if _, err := pl.Append(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := probe.puts
	if _, err := pl.Append(ctx, second); err != nil {
		t.Fatal(err)
	}
	puts := probe.puts - before
	if puts < 5 {
		t.Fatalf("the second batch made %d puts", puts)
	}
	for _, after := range []bool{false, true} {
		for k := 0; k < puts; k++ {
			t.Run(fmt.Sprintf("put%d/after=%v", k, after), func(t *testing.T) {
				dir := dirblob.New(t.TempDir(), nil)
				l, _ := Open(ctx, dir, skey, Options{Parallel: 1})
				if _, err := l.Append(ctx, first); err != nil {
					t.Fatal(err)
				}
				f := &faultyBlobs{Store: dir, failAt: k, after: after}
				fl, err := Open(ctx, f, skey, Options{Parallel: 1})
				if err != nil {
					t.Fatal(err)
				}
				f.puts = 0
				if _, err := fl.Append(ctx, second); !errors.Is(err, errInjected) {
					t.Fatalf("append with a fault at put %d: %v", k, err)
				}
				// The crashed log verifies but for a latest checkpoint
				// older than the history (the writer died between them).
				r, err := Verify(ctx, dir, v, VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Problems {
					if p.Where != latestKey {
						t.Errorf("after the crash: %s", p)
					}
				}
				// A new writer (the restarted Workman) retries the batch.
				l2, err := Open(ctx, dir, skey, Options{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := l2.Append(ctx, second)
				if err != nil {
					t.Fatal(err)
				}
				if res.Appended+len(res.Duplicates) != len(second) || len(res.Conflicts) != 0 {
					t.Fatalf("retry: %d appended, %d duplicates, %d conflicts", res.Appended, len(res.Duplicates), len(res.Conflicts))
				}
				mustVerify(t, dir, v)
				var want []string
				for _, e := range append(slices.Clone(first), second...) {
					want = append(want, e.ID)
				}
				if got := leafIDs(t, dir, v); !slices.Equal(got, want) {
					t.Fatalf("the log holds %d events, want the %d appended once each in order", len(got), len(want))
				}
			})
		}
	}
}

// TestOpenRejectsForeignKey: a log opened with a key other than its own
// fails (the newest checkpoint does not verify) instead of forking it.
func TestOpenRejectsForeignKey(t *testing.T) {
	ctx := context.Background()
	skey, _ := testKey(t)
	b := dirblob.New(t.TempDir(), nil)
	l, _ := Open(ctx, b, skey, Options{})
	if _, err := l.Append(ctx, fixityEvents(0, 3)); err != nil {
		t.Fatal(err)
	}
	other, _ := testKey(t)
	if _, err := Open(ctx, b, other, Options{}); err == nil {
		t.Fatal("opened a log with another key")
	}
}

// TestRetryOnSameLogAfterCommittedFailure: a batch whose checkpoint landed
// but whose Append failed (the latest checkpoint's put) leaves the writer
// to read the log again, so a different batch retried on the same Log
// extends the committed one instead of forking it.
func TestRetryOnSameLogAfterCommittedFailure(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	f := &faultyBlobs{Store: dir, failAt: 1 << 30}
	l, err := Open(ctx, f, skey, Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, fixityEvents(0, 100)); err != nil {
		t.Fatal(err)
	}
	// The second batch's puts: tile, data tile, history, latest; the
	// history lands, the latest fails.
	f.puts, f.failAt = 0, 3
	if _, err := l.Append(ctx, fixityEvents(100, 50)); !errors.Is(err, errInjected) {
		t.Fatalf("append: %v, want the injected fault", err)
	}
	f.failAt = 1 << 30
	res, err := l.Append(ctx, fixityEvents(120, 60)) // overlaps the committed batch
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 30 || len(res.Duplicates) != 30 || res.Checkpoint.Size != 180 {
		t.Fatalf("retry: %d appended, %d duplicates, size %d; want 30, 30, 180", res.Appended, len(res.Duplicates), res.Checkpoint.Size)
	}
	mustVerify(t, dir, v)
	if got := leafIDs(t, dir, v); len(got) != 180 || got[179] != fixityEvent(179).ID {
		t.Fatalf("%d leaves", len(got))
	}
}

// TestConcurrentAppends: batches appended from several goroutines at once
// are all in the log, once each, and it verifies.
func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	l, err := Open(ctx, dir, skey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for b := range 10 {
				if _, err := l.Append(ctx, fixityEvents(g*1000+b*50, 50)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	mustVerify(t, dir, v)
	ids := leafIDs(t, dir, v)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if len(ids) != 2000 || len(seen) != 2000 {
		t.Fatalf("%d leaves, %d distinct; want 2000", len(ids), len(seen))
	}
}

// TestEventsChecksLeaves: Events returns every event in log order, and
// refuses a data tile changed after its checkpoint.
func TestEventsChecksLeaves(t *testing.T) {
	ctx := context.Background()
	skey, v := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	l, _ := Open(ctx, dir, skey, Options{})
	if _, err := l.Append(ctx, fixityEvents(0, 300)); err != nil {
		t.Fatal(err)
	}
	var n int64
	cp, err := Events(ctx, dir, v, func(x int64, e *Event) error {
		if x != n || e.ID != fixityEvent(int(x)).ID {
			t.Fatalf("event %d is %s", x, e.ID)
		}
		n++
		return nil
	})
	if err != nil || n != 300 || cp.Size != 300 {
		t.Fatalf("read %d events, size %v: %v", n, cp, err)
	}
	p := filepath.Join(dir.Root(), "tile", "8", "data", "001.p", "44")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, bytes.Replace(b, []byte(`"outcome":"success"`), []byte(`"outcome":"failure"`), 1), 0o644)
	_, err = Events(ctx, dir, v, func(int64, *Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "leaf 256") {
		t.Fatalf("read a changed leaf: %v", err)
	}
}
