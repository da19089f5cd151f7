package fsstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/memstat"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
)

// benchFlatSizes are the sizes of BenchmarkFlatWalk's spaces:
// MILL_BENCH_FLAT_ITEMS, comma-separated (default 10000,100000,1000000).
func benchFlatSizes(b *testing.B) []int {
	return testenv.BenchSizes(b, "MILL_BENCH_FLAT_ITEMS", "10000,100000,1000000")
}

// BenchmarkFlatWalk walks (storage.Walk, pages of 1,000) a space of one
// flat directory at each size of MILL_BENCH_FLAT_ITEMS and reports the time
// per item and the walk's peak RSS at each size, and the time per item at
// the largest size over that at the smallest (1 = linear). Each item is a
// sidecar and a blob name (hard links to one empty file: a listing reads
// names only),
// in a directory last written an hour before the walk, as a space that is
// not being written is.
func BenchmarkFlatWalk(b *testing.B) {
	sizes := benchFlatSizes(b)
	perItem := make([]float64, len(sizes))
	var peak float64
	for b.Loop() {
		for i, n := range sizes {
			perItem[i], peak = flatWalk(b, n)
		}
	}
	last := len(perItem) - 1
	b.ReportMetric(perItem[last]/perItem[0], "largest/smallest")
	// The largest size's figures again, under names that do not depend
	// on it (make bench runs fewer than the acceptance's 1,000,000).
	b.ReportMetric(perItem[last], "largest-ns/item")
	b.ReportMetric(peak, "largest-peak-rss-MiB")
	b.ReportMetric(float64(sizes[last]), "largest-items")
}

// flatWalk sets up and walks one flat space of n items and returns the
// walk's time per item in nanoseconds and its peak RSS in MiB.
func flatWalk(b *testing.B, n int) (nsPerItem, peakMiB float64) {
	b.StopTimer()
	defer b.StartTimer()
	root, err := os.MkdirTemp("", "mill-flatwalk-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	s, err := New(root)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateSpace(ctx, "flat"); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "flat")
	// Hard links to one empty file: the directory's entries are what they
	// are for real items, at a fraction of the cost of creating files.
	// (A new file every 30,000 items: ext4 allows 65,000 links.)
	var one string
	for i := range n {
		if i%30000 == 0 {
			one = filepath.Join(root, fmt.Sprintf("one-%d", i))
			if err := os.WriteFile(one, nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		seg := fmt.Sprintf("item-%08d", i)
		for _, name := range []string{seg + metaSuffix, seg + ".0123456789abcdef" + blobSuffix} {
			if err := os.Link(one, filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
		}
	}
	age(b, dir, time.Now().Add(-time.Hour))
	memstat.ResetPeak()
	start := time.Now()
	got := 0
	for _, err := range storage.Walk(ctx, s, "flat", "", 1000) {
		if err != nil {
			b.Fatal(err)
		}
		got++
	}
	elapsed := time.Since(start)
	if got != n {
		b.Fatalf("walked %d items, want %d", got, n)
	}
	b.Logf("%d items: %v, %d directory reads", n, elapsed, s.dirReads())
	label := strconv.Itoa(n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), label+"-ns/item")
	peakMiB = memstat.PeakRSSMiB()
	b.ReportMetric(peakMiB, label+"-peak-rss-MiB")
	return float64(elapsed.Nanoseconds()) / float64(n), peakMiB
}
