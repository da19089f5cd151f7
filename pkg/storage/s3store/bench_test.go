package s3store

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/memstat"

	"github.com/millfleet/mill/pkg/storage"
)

// genReader yields n pseudo-random bytes (xorshift) without holding them.
type genReader struct {
	left  int64
	state uint64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	n := len(p) &^ 7
	if n == 0 {
		n = 8
		if len(p) < 8 {
			return 0, io.ErrShortBuffer
		}
	}
	n = int(min(int64(n), g.left))
	var w [8]byte
	for i := 0; i < n; i += 8 {
		g.state ^= g.state << 13
		g.state ^= g.state >> 7
		g.state ^= g.state << 17
		binary.LittleEndian.PutUint64(w[:], g.state)
		copy(p[i:n], w[:])
	}
	g.left -= int64(n)
	return n, nil
}

// memPeak samples the Go runtime's memory every 10 ms until stopped.
type memPeak struct {
	heapInuse, sys atomic.Uint64
	stop           chan struct{}
	wg             sync.WaitGroup
}

func startMemPeak() *memPeak {
	m := &memPeak{stop: make(chan struct{})}
	m.wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > m.heapInuse.Load() {
				m.heapInuse.Store(ms.HeapInuse)
			}
			if ms.Sys > m.sys.Load() {
				m.sys.Store(ms.Sys)
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	})
	return m
}

func (m *memPeak) done() { close(m.stop); m.wg.Wait() }

// BenchmarkBigObject streams MILL_BENCH_BIG_BYTES (default 1 GiB) of
// generated content into S3 through the store with the default
// configuration (multipart, 4 streams of 8 MiB parts), reads it back
// hashing it, and reports the process's peak memory: heap-in-use and Sys
// sampled from the runtime, and VmHWM (peak RSS) from /proc, which must
// stay under storage.MemoryBound of the store's settings (bound-MiB) and
// under 100 MiB. It runs under `make bench`
// (go test -bench . -benchtime 1x), never in the normal test run.
func BenchmarkBigObject(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("MILL_BENCH_BIG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("MILL_BENCH_BIG_BYTES=%q: want a positive byte count", v)
		}
		size = n
	}
	client, bucket := setupBucket(b)
	s, err := New(client, Config{Bucket: bucket, Prefix: "bench/"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if err := s.CreateSpace(ctx, "big"); err != nil {
		b.Fatal(err)
	}
	// The expected MD5, computed from the generator without storing it.
	h := md5.New()
	if _, err := io.Copy(h, &genReader{left: size, state: 0x9e3779b97f4a7c15}); err != nil {
		b.Fatal(err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	runtime.GC()
	mem := startMemPeak()
	b.SetBytes(size)
	b.ResetTimer()
	var putTime, getTime time.Duration
	for b.Loop() {
		start := time.Now()
		info, err := s.Put(ctx, "big", "object", &genReader{left: size, state: 0x9e3779b97f4a7c15}, storage.PutOptions{Size: size, Checksum: want})
		if err != nil {
			b.Fatal(err)
		}
		putTime += time.Since(start)
		if info.Checksum != want || info.Size != size {
			b.Fatalf("put: %+v, want MD5 %s", info, want)
		}
		start = time.Now()
		rc, ginfo, err := s.Get(ctx, "big", "object")
		if err != nil {
			b.Fatal(err)
		}
		g := md5.New()
		n, err := io.Copy(g, rc)
		rc.Close()
		if err != nil {
			b.Fatal(err)
		}
		getTime += time.Since(start)
		if got := hex.EncodeToString(g.Sum(nil)); n != size || got != want || ginfo.Checksum != want {
			b.Fatalf("read back %d bytes MD5 %s (Info %s), want %d bytes MD5 %s", n, got, ginfo.Checksum, size, want)
		}
		b.Logf("put %s, get %s, provider checksum %s", putTime.Round(time.Millisecond), getTime.Round(time.Millisecond), info.ProviderChecksum)
	}
	b.StopTimer()
	mem.done()
	const mib = 1 << 20
	b.ReportMetric(float64(mem.heapInuse.Load())/mib, "peak-heap-inuse-MiB")
	b.ReportMetric(float64(mem.sys.Load())/mib, "peak-sys-MiB")
	hwm := memstat.PeakRSSMiB()
	cfg := s.Config()
	bound := storage.MemoryBound(storage.Transfer{Streams: cfg.Streams, PartSize: max(cfg.PartSize, cfg.Threshold/int64(cfg.Streams))})
	b.ReportMetric(hwm, "peak-rss-MiB")
	b.ReportMetric(bound, "bound-MiB")
	b.ReportMetric(float64(size)/mib/putTime.Seconds()*float64(b.N), "put-MiB/s")
	b.ReportMetric(float64(size)/mib/getTime.Seconds()*float64(b.N), "get-MiB/s")
	memstat.CheckBound(b, fmt.Sprintf("put + get (%d streams of %d MiB + %d)", cfg.Streams, cfg.PartSize>>20, storage.MemoryConstMiB), hwm, bound)
}
