// Package blobstest is the conformance suite of evidence.Blobs: every
// implementation runs it, then an evidence log on it (append, reopen,
// verify, prove).
package blobstest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/millfleet/mill/pkg/evidence"
)

// Run runs the suite; newBlobs returns an empty store for each test.
func Run(t *testing.T, newBlobs func(t *testing.T) evidence.Blobs) {
	t.Run("GetPutList", func(t *testing.T) {
		ctx := context.Background()
		b := newBlobs(t)
		if _, err := b.Get(ctx, "checkpoint"); !errors.Is(err, evidence.ErrNotFound) {
			t.Fatalf("get of a missing blob: %v, want ErrNotFound", err)
		}
		if keys, err := b.List(ctx, ""); err != nil || len(keys) != 0 {
			t.Fatalf("list of an empty store: %v, %v", keys, err)
		}
		for k, v := range map[string]string{"checkpoint": "a", "checkpoints/00000000000000000002": "b", "checkpoints/00000000000000000001": "c", "tile/8/0/000.p/3": "d"} {
			if err := b.Put(ctx, k, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Put(ctx, "checkpoint", []byte("replaced")); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ctx, "checkpoint"); err != nil || string(got) != "replaced" {
			t.Fatalf("get after a replacing put: %q, %v", got, err)
		}
		if got, err := b.Get(ctx, "tile/8/0/000.p/3"); err != nil || string(got) != "d" {
			t.Fatalf("get: %q, %v", got, err)
		}
		keys, err := b.List(ctx, "checkpoints/")
		if err != nil || !slices.Equal(keys, []string{"checkpoints/00000000000000000001", "checkpoints/00000000000000000002"}) {
			t.Fatalf("list checkpoints/: %v, %v", keys, err)
		}
		all, err := b.List(ctx, "")
		if err != nil || len(all) != 4 || !slices.IsSorted(all) {
			t.Fatalf("list: %v, %v", all, err)
		}
		big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18)
		if err := b.Put(ctx, "tile/8/data/000", big); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ctx, "tile/8/data/000"); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("a 1 MiB blob did not read back: %d bytes, %v", len(got), err)
		}
		if err := b.Put(ctx, "tile/8/data/001", make([]byte, evidence.MaxBlob+1)); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ctx, "tile/8/data/001"); err == nil || errors.Is(err, evidence.ErrNotFound) {
			t.Fatalf("a blob larger than MaxBlob: %d bytes, %v; want an error", len(got), err)
		}
	})
	t.Run("HostileKeys", func(t *testing.T) {
		ctx := context.Background()
		b := newBlobs(t)
		for _, k := range []string{"../x", "a/../../x", "/abs", "a//b", "", "sp ace"} {
			if err := b.Put(ctx, k, []byte("x")); err == nil {
				t.Errorf("put %q succeeded", k)
			}
		}
	})
	t.Run("Log", func(t *testing.T) {
		ctx := context.Background()
		b := newBlobs(t)
		skey, vkey, err := evidence.GenerateKey("mill.test/blobstest")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := evidence.NewVerifier(vkey)
		l, err := evidence.Open(ctx, b, skey, evidence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for batch := range 3 {
			var es []*evidence.Event
			for i := range 200 {
				e := event(batch*200 + i)
				ids = append(ids, e.ID)
				es = append(es, e)
			}
			if _, err := l.Append(ctx, es); err != nil {
				t.Fatal(err)
			}
			if batch == 1 { // a restart in the middle
				if l, err = evidence.Open(ctx, b, skey, evidence.Options{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		r, err := evidence.Verify(ctx, b, v, evidence.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Latest.Size != 600 || r.Checkpoints != 3 {
			t.Fatalf("verify: %+v", r)
		}
		p, err := evidence.Prove(ctx, b, v, ids[333])
		if err != nil || p.Index != 333 {
			t.Fatalf("prove: %v, %v", p, err)
		}
	})
}

func event(i int) *evidence.Event {
	return &evidence.Event{
		V: evidence.FormatVersion, ID: evidence.EventID("blobstest", strconv.Itoa(i)), Type: evidence.Deletion,
		Time:    "2026-07-01T00:00:00Z",
		Object:  evidence.Copy{Account: "acme", Store: "s1", Space: "sp", ContentID: "item-" + strconv.Itoa(i)},
		Outcome: evidence.Success, Rule: "test",
		Agent: evidence.Agent{Kind: evidence.Software, Name: "workman"},
	}
}
