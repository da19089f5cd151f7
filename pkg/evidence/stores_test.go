package evidence_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// TestLogOnEveryStore appends, reopens, verifies and proves a log on each
// blob store it is kept in: memory, a directory, and the emulator's S3 in
// a plain bucket and in one with Object Lock (versioned; no default
// retention, so the test can remove it) as the evidence bucket is. A tile
// over MaxBlob is refused by each store made with that bound.
func TestLogOnEveryStore(t *testing.T) {
	bound := &blob.Options{MaxSize: evidence.MaxBlob}
	stores := map[string]func(t *testing.T) blob.Store{
		"memory": func(*testing.T) blob.Store { return memblob.New(bound) },
		"dir":    func(t *testing.T) blob.Store { return dirblob.New(t.TempDir(), bound) },
	}
	for name, lock := range map[string]bool{"s3": false, "s3-objectlock": true} {
		stores[name] = func(t *testing.T) blob.Store {
			cfg := testenv.AWS(t)
			c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
			bucket := testenv.Bucket(t, c, "evidence", lock)
			return s3blob.New(c, bucket, "mill/", &s3blob.Options{MaxSize: evidence.MaxBlob})
		}
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			logOn(t, open(t))
		})
	}
}

func logOn(t *testing.T, b blob.Store) {
	ctx := context.Background()
	skey, vkey, err := evidence.GenerateKey("mill.test/stores")
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
			e := storeEvent(batch*200 + i)
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
	if err := b.Put(ctx, "tile/8/data/001", make([]byte, evidence.MaxBlob+1)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "tile/8/data/001"); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("a blob larger than MaxBlob: %d bytes, %v; want ErrTooLarge", len(got), err)
	}
}

func storeEvent(i int) *evidence.Event {
	return &evidence.Event{
		V: evidence.FormatVersion, ID: evidence.EventID("stores", strconv.Itoa(i)), Type: evidence.Deletion,
		Time:    "2026-07-01T00:00:00Z",
		Object:  evidence.Copy{Account: "acme", Store: "s1", Space: "sp", ContentID: "item-" + strconv.Itoa(i)},
		Outcome: evidence.Success, Rule: "test",
		Agent: evidence.Agent{Kind: evidence.Software, Name: "workman"},
	}
}
