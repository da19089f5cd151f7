package dup_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/dup"
)

// gatedSource reads ranges of an s3store item, holding each read at or
// past byte hold until gate is closed, and records every range's offset.
type gatedSource struct {
	*s3store.Store
	hold   int64
	held   chan struct{} // closed when a read reaches hold
	gate   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	ranges []int64
}

func (g *gatedSource) GetRange(ctx context.Context, space, id string, off, n int64, rev string) (io.ReadCloser, *storage.Info, error) {
	g.mu.Lock()
	g.ranges = append(g.ranges, off)
	g.mu.Unlock()
	if off >= g.hold {
		g.once.Do(func() { close(g.held) })
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return g.Store.GetRange(ctx, space, id, off, n, rev)
}

func (g *gatedSource) offsets() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.ranges...)
}

// TestCopyContinuesAfterContinueAfter: a resumable copy still running
// after ContinueAfter (on the clock) stops at its next checkpoint and
// hands its task back (processors.Release, no attempt counted); the next
// run of the task resumes from the checkpoint, reads none of the parts
// already uploaded, and completes the copy.
func TestCopyContinuesAfterContinueAfter(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.S3()
	ctx := t.Context()
	bucket := testenv.Prefix(t) + "cont"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	const part = 5 << 20
	store := func(prefix string) *s3store.Store {
		s, err := s3store.New(client, s3store.Config{Bucket: bucket, Prefix: prefix, Upload: storage.Upload{Threshold: part, Transfer: storage.Transfer{PartSize: part}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		return s
	}
	srcStore, dst := store("src/"), store("dst/")
	data := make([]byte, 4*part+99)
	if _, err := io.ReadFull(testenv.Pattern(3, int64(len(data))), data); err != nil {
		t.Fatal(err)
	}
	if _, err := srcStore.Put(ctx, space, "big", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	cps := memblob.New(nil)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const after = 11 * time.Hour
	newProc := func(src storage.Provider) *dup.Processor {
		p, err := dup.New(dup.Config{
			Opener:   opener{"1": src, "2": dst},
			Audit:    func(p storage.Provider, _, _, _ string) (storage.Provider, error) { return p, nil },
			Live:     dup.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil }),
			Policies: allow(t, oneToTwo), DisableServerSideCopy: true, Clock: clk, Logger: testLogger(t),
			Transfer:    storage.Transfer{Streams: 1, PartSize: part},
			Checkpoints: cps, ResumeMinSize: 1, ContinueAfter: after,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// First run: the read of the second part waits until the clock has
	// passed ContinueAfter.
	first := &gatedSource{Store: srcStore, hold: part, held: make(chan struct{}), gate: make(chan struct{})}
	res := make(chan error, 1)
	go func() {
		_, err := newProc(first).Process(ctx, dupTask("big"))
		res <- err
	}()
	<-first.held
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(after)
	close(first.gate)
	err := <-res
	if why, ok := processors.IsReleased(err); !ok {
		t.Fatalf("first run: %v, want a release (a continuation)", err)
	} else {
		t.Logf("released: %s", why)
	}
	if len(blobtest.Keys(t, cps)) != 1 {
		t.Fatalf("checkpoints after the continuation: %v", blobtest.Keys(t, cps))
	}
	if _, err := dst.Head(ctx, space, "big"); err == nil {
		t.Fatal("the item is at the destination after a suspended copy")
	}

	// Second run: resumes; the parts uploaded before are not read again,
	// not even partly (the Info is the one the processor read).
	second := &gatedSource{Store: srcStore, hold: 1 << 62, held: make(chan struct{}), gate: make(chan struct{})}
	if a, err := newProc(second).Process(ctx, dupTask("big")); err != nil || a != dup.CopyContent {
		t.Fatalf("second run: %v, %v", a, err)
	}
	offs := second.offsets()
	for _, off := range offs {
		if off < 2*part {
			t.Errorf("the resumed copy read the range at %d again (ranges %v)", off, offs)
		}
	}
	got, _, err := dst.Get(ctx, space, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	b, _ := io.ReadAll(got)
	if !bytes.Equal(b, data) {
		t.Fatal("the continued copy differs from the source")
	}
	if keys := blobtest.Keys(t, cps); len(keys) != 0 {
		t.Errorf("checkpoints left: %v", keys)
	}
}
