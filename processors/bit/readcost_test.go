package bit

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// countingCheckpoints counts every request made of a checkpoint store.
type countingCheckpoints struct {
	*memblob.Store
	mu                 sync.Mutex
	loads, saves, dels int
}

func (c *countingCheckpoints) Get(ctx context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	c.loads++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func (c *countingCheckpoints) Put(ctx context.Context, key string, b []byte) error {
	c.mu.Lock()
	c.saves++
	c.mu.Unlock()
	return c.Store.Put(ctx, key, b)
}

func (c *countingCheckpoints) Delete(ctx context.Context, keys ...string) error {
	c.mu.Lock()
	c.dels++
	c.mu.Unlock()
	return c.Store.Delete(ctx, keys...)
}

func (c *countingCheckpoints) counts() [3]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [3]int{c.loads, c.saves, c.dels}
}

// revisioned gives the fs store's items a revision (as S3's versions or
// ETags do), so a big item's read is checkpointed, and counts its Gets.
type revisioned struct {
	storage.Provider
	mu   sync.Mutex
	gets int
}

func (r *revisioned) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	rc, info, err := r.Provider.Get(ctx, space, id)
	if info != nil {
		in := *info
		in.Revision = "r1"
		info = &in
	}
	return rc, info, err
}

// TestReadSmallItemTouchesNoCheckpoint: a check of an item below
// ResumeMinSize makes no checkpoint request at all (no load, save or
// delete), one Get only; one at or above it loads the checkpoint, saves
// one every CheckpointEvery bytes and deletes it once read.
func TestReadSmallItemTouchesNoCheckpoint(t *testing.T) {
	ctx := t.Context()
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prov := &revisioned{Provider: fs}
	if err := prov.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	const minSize, every = 4 << 10, 1 << 10
	put := func(id string, n int) {
		b := bytes.Repeat([]byte{7}, n)
		if _, err := prov.Put(ctx, "s", id, bytes.NewReader(b), storage.PutOptions{Size: int64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	put("small", minSize-1)
	put("big", 3*minSize)
	for _, c := range []struct {
		id   string
		size int64
		want [3]int // loads, saves, deletes
	}{
		{"small", minSize - 1, [3]int{0, 0, 0}},
		{"big", 3 * minSize, [3]int{1, 3*minSize/every - 1, 1}},
	} {
		t.Run(c.id, func(t *testing.T) {
			cps := &countingCheckpoints{Store: memblob.New(nil)}
			prov.gets = 0
			ob := &Observer{ReadSettings: ReadSettings{Transfer: storage.Transfer{Streams: 1, PartSize: every},
				Checkpoints: cps, ResumeMinSize: minSize, CheckpointEvery: every}}
			info, sums, err := ob.read(ctx, prov, "s", c.id, storage.CheckpointKey("bit", c.id))
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != c.size || sums.Len() != c.size {
				t.Fatalf("read %d of %d bytes, want %d", sums.Len(), info.Size, c.size)
			}
			if got := cps.counts(); got != c.want {
				t.Errorf("checkpoint loads, saves, deletes = %v, want %v", got, c.want)
			}
			if prov.gets != 1 {
				t.Errorf("%d Gets of the item, want 1", prov.gets)
			}
			if keys := blobtest.Keys(t, cps); len(keys) != 0 {
				t.Errorf("checkpoints left: %v", keys)
			}
		})
	}
}
