package fsstore

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/millfleet/mill/pkg/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		LargeSize:         3 << 20,
		InvalidContentIDs: []string{"../escape", "a/../../b", "/absolute", "trailing/", "a//b", "./a", "a/.", strings.Repeat("s", MaxSegmentLen+1)},
		New:               fixture,
	})
}

// The suite again with listings spilled to indexes on disk every few
// entries (smallIndex).
func TestConformanceSpilledListings(t *testing.T) {
	smallIndex(t)
	TestConformance(t)
}

func fixture(t *testing.T) storagetest.Fixture {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return storagetest.Fixture{
		Provider: s,
		Corrupt: func(t *testing.T, space, id string) {
			p, err := s.BlobPath(space, id)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x01
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		Replace: func(t *testing.T, space, id string, data []byte) {
			p, err := s.BlobPath(space, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".new", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// Two stores on one directory (two processes) creating the same spaces at
// once: each space is reported created exactly once.
func TestCreateSpaceOnceAcrossStores(t *testing.T) {
	dir := t.TempDir()
	var stores [4]*Store
	for i := range stores {
		s, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	const spaces = 20
	var created [spaces]atomic.Int32
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			for i := range spaces {
				ok, err := s.CreateSpaceIfAbsent(t.Context(), fmt.Sprintf("space-%d", i))
				if err != nil {
					t.Errorf("CreateSpaceIfAbsent: %v", err)
				}
				if ok {
					created[i].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for i := range created {
		if n := created[i].Load(); n != 1 {
			t.Errorf("space-%d: %d stores say they created it, want 1", i, n)
		}
	}
}
