package storage_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/storage"
)

// rangeSource serves ranged reads of data as revision "r1" and records
// each range's offset.
type rangeSource struct {
	storage.Provider
	data []byte
	mu   sync.Mutex
	offs []int64
}

func (s *rangeSource) GetRange(_ context.Context, _, _ string, off, n int64, rev string) (io.ReadCloser, *storage.Info, error) {
	s.mu.Lock()
	s.offs = append(s.offs, off)
	s.mu.Unlock()
	if rev != "" && rev != "r1" {
		return nil, nil, storage.ErrChanged
	}
	end := min(off+n, int64(len(s.data)))
	return io.NopCloser(bytes.NewReader(s.data[off:end])), &storage.Info{Size: int64(len(s.data)), Checksum: "c", Revision: "r1"}, nil
}

// resumingDest is a destination whose Put reads from byte from on, as a
// put resumed from a checkpoint there does.
type resumingDest struct {
	storage.Provider
	from int64
	got  []byte
}

func (d *resumingDest) Put(_ context.Context, _, _ string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	d.got = make([]byte, opts.Size-d.from)
	if _, err := r.(io.ReaderAt).ReadAt(d.got, d.from); err != nil && err != io.EOF {
		return nil, err
	}
	return &storage.Info{Size: opts.Size, Checksum: opts.Checksum}, nil
}

// TestCopyWithSourceReadsOnlyWhatTheDestinationAsks: a resumable copy
// given the source's Info sends no request of its own, so a put resumed
// past the first part reads nothing before its checkpoint; without the
// Info (or below Resume.MinSize) the first part is requested up front
// for it.
func TestCopyWithSourceReadsOnlyWhatTheDestinationAsks(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info := &storage.Info{Size: int64(len(data)), Checksum: "c", Revision: "r1"}
	for _, tc := range []struct {
		name     string
		source   *storage.Info
		minSize  int64
		wantOffs []int64
	}{
		{"source given", info, 1, []int64{600}},
		{"no source", nil, 1, []int64{0, 600}},
		{"below MinSize", info, 2000, []int64{0, 600}},
	} {
		src := &rangeSource{data: data}
		dst := &resumingDest{from: 600}
		opts := storage.CopyOptions{Transfer: storage.Transfer{Streams: 2, PartSize: 100}, Source: tc.source,
			Resume: &storage.Resume{Checkpoints: memblob.New(nil), Key: "k", MinSize: tc.minSize}}
		if _, err := storage.CopyWith(t.Context(), src, "s", "x", dst, "s", opts); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(src.offs, tc.wantOffs) {
			t.Errorf("%s: ranges read at %v, want %v", tc.name, src.offs, tc.wantOffs)
		}
		if !bytes.Equal(dst.got, data[600:]) {
			t.Errorf("%s: the destination read other bytes", tc.name)
		}
	}
}
