package storage_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"hash/crc64"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// fillAt fills buf with the bytes of a known stream at off.
func fillAt(off int64, buf []byte) {
	for i := range buf {
		buf[i] = byte((off + int64(i)) * 7 % 251)
	}
}

func content(n int64) []byte {
	b := make([]byte, n)
	fillAt(0, b)
	return b
}

// TestPartsInOrderFromParallelFills: Streams fills run at once, finish in
// any order, and InOrder still gets the parts in order, whole, from no
// more than Streams buffers.
func TestPartsInOrderFromParallelFills(t *testing.T) {
	const size, streams, total = 10, 3, 95 // ten parts, the last of 5 bytes
	type started struct {
		i       int
		release chan struct{}
	}
	starts := make(chan started)
	var inFlight, maxInFlight atomic.Int32
	var bufMu sync.Mutex
	bufs := map[*byte]bool{}
	var got bytes.Buffer
	var order []int
	done := make(chan error, 1)
	go func() {
		done <- storage.Parts{Start: 0, End: total, Size: size, Streams: streams,
			Fill: func(ctx context.Context, i int, off int64, buf []byte) (int, error) {
				bufMu.Lock()
				bufs[&buf[:1][0]] = true
				bufMu.Unlock()
				n := inFlight.Add(1)
				for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
				}
				rel := make(chan struct{})
				starts <- started{i, rel}
				<-rel
				fillAt(off, buf)
				inFlight.Add(-1)
				return len(buf), nil
			},
			InOrder: func(i int, off int64, p []byte) error {
				if off != int64(i)*size {
					t.Errorf("part %d at %d", i, off)
				}
				order = append(order, i)
				got.Write(p)
				return nil
			},
		}.Run(context.Background())
	}()
	for left := 10; left > 0; {
		batch := make([]started, 0, streams)
		for range min(streams, left) {
			batch = append(batch, <-starts)
		}
		// All of the batch are in Fill at once; release them last first.
		for _, s := range slices.Backward(batch) {
			close(s.release)
		}
		left -= len(batch)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if maxInFlight.Load() != streams {
		t.Errorf("at most %d fills at once, want %d", maxInFlight.Load(), streams)
	}
	if len(bufs) > streams {
		t.Errorf("%d buffers used, want at most %d", len(bufs), streams)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(order, want) {
		t.Errorf("InOrder got parts %v", order)
	}
	if !bytes.Equal(got.Bytes(), content(total)) {
		t.Error("the parts joined are not the content")
	}
}

// TestPartsMemoryBound: while Streams parts are held by After (uploads
// under way), no further part is filled.
func TestPartsMemoryBound(t *testing.T) {
	const streams = 2
	var fills atomic.Int32
	entered := make(chan int)
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- storage.Parts{Start: 0, End: 100, Size: 10, Streams: streams,
			Fill: func(_ context.Context, _ int, off int64, buf []byte) (int, error) {
				fills.Add(1)
				fillAt(off, buf)
				return len(buf), nil
			},
			After: func(_ context.Context, i int, _ int64, _ []byte) error {
				entered <- i
				<-gate
				return nil
			},
		}.Run(context.Background())
	}()
	a, b := <-entered, <-entered
	// Both buffers are held: a third fill cannot have a buffer.
	if n := fills.Load(); n != streams {
		t.Errorf("%d fills while parts %d and %d upload, want %d", n, a, b, streams)
	}
	close(gate)
	for range 8 {
		<-entered
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := fills.Load(); n != 10 {
		t.Errorf("%d fills, want 10", n)
	}
}

// TestPartsFirstErrorCancels: a failing fill cancels the others, and Run
// returns its error only once every part in flight has returned.
func TestPartsFirstErrorCancels(t *testing.T) {
	boom := errors.New("boom")
	var running atomic.Int32
	waiting := make(chan struct{}, 8)
	err := storage.Parts{Start: 0, End: 100, Size: 10, Streams: 4,
		Fill: func(ctx context.Context, i int, _ int64, _ []byte) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			if i == 2 {
				// Fail once the others are waiting.
				for range 3 {
					<-waiting
				}
				return 0, boom
			}
			waiting <- struct{}{}
			<-ctx.Done()
			return 0, context.Cause(ctx)
		},
		InOrder: func(int, int64, []byte) error { t.Error("InOrder called after failed fills"); return nil },
	}.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the fill's error", err)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d fills still running after Run returned", n)
	}
}

// TestPartsAfterError: an upload's failure is Run's error, and the parts
// after it are not handed on.
func TestPartsAfterError(t *testing.T) {
	boom := errors.New("upload refused")
	var after atomic.Int32
	err := storage.Parts{Start: 0, End: 100, Size: 10, Streams: 1,
		Fill: func(_ context.Context, _ int, _ int64, buf []byte) (int, error) { return len(buf), nil },
		After: func(_ context.Context, i int, _ int64, _ []byte) error {
			after.Add(1)
			if i == 3 {
				return boom
			}
			return nil
		},
	}.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v", err)
	}
	if n := after.Load(); n != 4 {
		t.Errorf("After called %d times, want 4 (one stream: nothing after the failure)", n)
	}
}

// TestPartsStop: closing Stop finishes the parts started and returns
// ErrSuspended; what was handed on is a prefix of the parts, each whole.
func TestPartsStop(t *testing.T) {
	stop := make(chan struct{})
	var got []int
	var afterDone atomic.Int32
	err := storage.Parts{Start: 0, End: 1000, Size: 10, Streams: 3, Stop: stop,
		Fill: func(_ context.Context, _ int, _ int64, buf []byte) (int, error) { return len(buf), nil },
		InOrder: func(i int, _ int64, _ []byte) error {
			got = append(got, i)
			if i == 4 {
				close(stop)
			}
			return nil
		},
		After: func(context.Context, int, int64, []byte) error { afterDone.Add(1); return nil },
	}.Run(context.Background())
	if !errors.Is(err, storage.ErrSuspended) {
		t.Fatalf("Run = %v, want ErrSuspended", err)
	}
	for k, i := range got {
		if i != k {
			t.Fatalf("parts handed on %v: not a prefix", got)
		}
	}
	if len(got) < 5 || len(got) > 5+3 || int(afterDone.Load()) != len(got) {
		t.Errorf("after Stop at part 4: %d parts in order, %d uploaded", len(got), afterDone.Load())
	}
}

// TestPartsContextCancel: a cancelled context is an error, never a
// successful end of the range.
func TestPartsContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := storage.Parts{Start: 0, End: 100, Size: 10, Streams: 2,
		Fill: func(_ context.Context, _ int, _ int64, buf []byte) (int, error) { return len(buf), nil },
		InOrder: func(i int, _ int64, _ []byte) error {
			if i == 1 {
				cancel()
			}
			return nil
		},
	}.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// TestPartsSerialUnknownEnd: with SerialFill and no end, the range ends
// at the first part not filled whole; an empty last part is not handed on.
func TestPartsSerialUnknownEnd(t *testing.T) {
	for _, n := range []int64{0, 7, 20, 25} {
		r := bytes.NewReader(content(n))
		var sizes []int
		var got bytes.Buffer
		err := storage.Parts{Start: 0, End: -1, Size: 10, Streams: 2, SerialFill: true,
			Fill: func(_ context.Context, _ int, _ int64, buf []byte) (int, error) {
				k, err := io.ReadFull(r, buf)
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					err = nil
				}
				return k, err
			},
			InOrder: func(_ int, _ int64, p []byte) error { sizes = append(sizes, len(p)); got.Write(p); return nil },
		}.Run(context.Background())
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		want := map[int64][]int{0: {0}, 7: {7}, 20: {10, 10}, 25: {10, 10, 5}}[n]
		if !slices.Equal(sizes, want) || !bytes.Equal(got.Bytes(), content(n)) {
			t.Errorf("%d bytes: parts %v, want %v", n, sizes, want)
		}
	}
}

func TestPartsValidate(t *testing.T) {
	fill := func(context.Context, int, int64, []byte) (int, error) { return 0, nil }
	for name, ps := range map[string]storage.Parts{
		"no size":     {End: 10, Streams: 1, Fill: fill},
		"no streams":  {End: 10, Size: 1, Fill: fill},
		"no fill":     {End: 10, Size: 1, Streams: 1},
		"unknown end": {End: -1, Size: 1, Streams: 1, Fill: fill},
	} {
		if err := ps.Run(context.Background()); err == nil {
			t.Errorf("%s: Run accepted %+v", name, ps)
		}
	}
}

// TestSumsResume: a marshalled state carries on as if never stopped, and a
// state Sums did not make is refused.
func TestSumsResume(t *testing.T) {
	data := content(1<<20 + 123)
	whole := md5.Sum(data)
	a := storage.NewSums()
	a.Write(data[:333333])
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := storage.NewSums()
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	b.Write(data[333333:])
	if b.MD5() != hex.EncodeToString(whole[:]) || b.CRC64NVME() != crc64.Checksum(data, storage.CRC64NVMETable) || b.Len() != int64(len(data)) {
		t.Errorf("resumed sums %s %x %d differ from one pass", b.MD5(), b.CRC64NVME(), b.Len())
	}
	bad := map[string][]byte{
		"empty":     nil,
		"garbage":   []byte(strings.Repeat("x", 200)),
		"truncated": st[:len(st)-3],
		"no md5":    st[:len("mill-sums-1")+16],
	}
	// A byte count that disagrees with the MD5 state's.
	lie := slices.Clone(st)
	lie[len("mill-sums-1")+15]++
	bad["count"] = lie
	for name, s := range bad {
		if err := storage.NewSums().UnmarshalBinary(s); err == nil {
			t.Errorf("%s: state accepted", name)
		}
	}
}

// onlyReader hides everything but Read.
type onlyReader struct{ io.Reader }

// TestReadAllSize: content shorter or longer than the size given is an
// error, whether read by ranges (io.ReaderAt) or as a stream.
func TestReadAllSize(t *testing.T) {
	tr := storage.Transfer{Streams: 3, PartSize: 10}
	data := content(95)
	for _, c := range []struct {
		name    string
		r       func() io.Reader
		size    int64
		wantErr bool
	}{
		{"ranges", func() io.Reader { return bytes.NewReader(data) }, 95, false},
		{"ranges, shorter", func() io.Reader { return bytes.NewReader(data[:90]) }, 95, true},
		{"ranges, longer", func() io.Reader { return bytes.NewReader(data) }, 90, true},
		{"stream", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, 95, false},
		{"stream, size unknown", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, -1, false},
		{"stream, shorter", func() io.Reader { return onlyReader{bytes.NewReader(data[:91])} }, 95, true},
		{"stream, longer", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, 90, true},
		{"stream, longer by a part", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, 85, true},
	} {
		var got bytes.Buffer
		n, err := storage.ReadAll(context.Background(), c.r(), c.size, tr, &got)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: ReadAll = %d, %v", c.name, n, err)
			continue
		}
		if !c.wantErr && (!bytes.Equal(got.Bytes(), data) || n != 95) {
			t.Errorf("%s: wrote %d bytes, not the content", c.name, n)
		}
	}
}

// TestCombineCRC64NVME: the CRC of two pieces combined is the CRC of the
// whole, for pieces of every length around the word and part sizes.
func TestCombineCRC64NVME(t *testing.T) {
	data := content(70000)
	for _, cut := range []int{0, 1, 7, 8, 9, 63, 64, 65, 4096, 65536, 69999, 70000} {
		a, b := data[:cut], data[cut:]
		got := storage.CombineCRC64NVME(crc64.Checksum(a, storage.CRC64NVMETable), crc64.Checksum(b, storage.CRC64NVMETable), int64(len(b)))
		if want := crc64.Checksum(data, storage.CRC64NVMETable); got != want {
			t.Errorf("cut at %d: combined %#x, want %#x", cut, got, want)
		}
	}
}
