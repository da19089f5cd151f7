package fsstore

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"sort"
	"sync"
)

// A directory too large for one chunk is listed from a sorted index on
// disk instead of memory (see the package doc, Listings): its entries are
// read a chunk at a time, each chunk sorted and written as a run of
// records (a length byte and the key) to a temporary file, the runs
// merged into one index file, and only every sparseStride-th key is kept
// in memory, with its offset, to find a marker by binary search. The
// settings are variables so that tests can make them small.
var (
	// spillChunk is the size in bytes (keys with their length bytes, and
	// 4 bytes an entry) from which a directory's entries are spilled: a
	// directory that fits is listed from memory.
	spillChunk = 1 << 20
	// mergeFanIn is how many runs one merge reads at once; more runs are
	// merged in passes.
	mergeFanIn = 32
	// mergeBuf is the read buffer of each run being merged and of a page
	// being read from an index.
	mergeBuf = 16 << 10
	// sparseStride: every sparseStride-th key of an index is kept in
	// memory.
	sparseStride = 128
)

// spillFile is an unlinked temporary file (a crash leaves nothing
// behind). Where a file cannot be removed while open, name is kept and
// the file removed when closed.
type spillFile struct {
	*os.File
	name string
}

// createSpill creates and unlinks a temporary file in dir; tests replace
// it to make spilling fail.
var createSpill = func(dir string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "mill-list-*")
	if err != nil {
		return nil, err
	}
	sf := &spillFile{File: f}
	if os.Remove(f.Name()) != nil {
		sf.name = f.Name()
	}
	return sf, nil
}

func (f *spillFile) close() {
	f.Close()
	if f.name != "" {
		os.Remove(f.name)
	}
}

// run is a sorted run of records at [off, off+n) of a spill file.
type run struct{ off, n int64 }

// spiller writes sorted runs to one spill file.
type spiller struct {
	dir  string
	f    *spillFile
	w    *bufio.Writer
	off  int64
	runs []run
}

// spill sorts d's entries and appends them to the run file as one run.
func (sp *spiller) spill(d *dirList) error {
	if sp.f == nil {
		f, err := createSpill(sp.dir)
		if err != nil {
			return err
		}
		sp.f, sp.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	d.sort()
	start := sp.off
	for _, e := range d.ents {
		k := d.at(e)
		if err := writeRecord(sp.w, k); err != nil {
			return err
		}
		sp.off += int64(1 + len(k))
	}
	sp.runs = append(sp.runs, run{start, sp.off - start})
	return nil
}

func writeRecord(w *bufio.Writer, k []byte) error {
	if err := w.WriteByte(byte(len(k))); err != nil {
		return err
	}
	_, err := w.Write(k)
	return err
}

// abandon closes the spill file.
func (sp *spiller) abandon() {
	if sp.f != nil {
		sp.f.close()
		sp.f = nil
	}
}

// index merges the runs, in passes of at most mergeFanIn, into one index
// file. The spiller's file is closed whatever the outcome.
func (sp *spiller) index() (*diskIndex, error) {
	defer sp.abandon()
	if err := sp.w.Flush(); err != nil {
		return nil, err
	}
	for len(sp.runs) > mergeFanIn {
		next := &spiller{dir: sp.dir}
		for i := 0; i < len(sp.runs); i += mergeFanIn {
			start := next.off
			if next.f == nil {
				f, err := createSpill(sp.dir)
				if err != nil {
					return nil, err
				}
				next.f, next.w = f, bufio.NewWriterSize(f, 64<<10)
			}
			err := merge(sp.f.File, sp.runs[i:min(i+mergeFanIn, len(sp.runs))], func(k []byte) error {
				next.off += int64(1 + len(k))
				return writeRecord(next.w, k)
			})
			if err != nil {
				next.abandon()
				return nil, err
			}
			next.runs = append(next.runs, run{start, next.off - start})
		}
		if err := next.w.Flush(); err != nil {
			next.abandon()
			return nil, err
		}
		sp.abandon()
		*sp = *next
	}
	f, err := createSpill(sp.dir)
	if err != nil {
		return nil, err
	}
	x := &diskIndex{f: f}
	w := bufio.NewWriterSize(f, 64<<10)
	err = merge(sp.f.File, sp.runs, func(k []byte) error {
		if x.n%sparseStride == 0 {
			x.sparse = append(x.sparse, byte(len(k)))
			x.sparse = append(x.sparse, k...)
			x.sparseOff = append(x.sparseOff, x.size)
		}
		x.n++
		x.size += int64(1 + len(k))
		return writeRecord(w, k)
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		x.close()
		return nil, err
	}
	x.sparse = slices.Clip(x.sparse)
	x.sparseOff = slices.Clip(x.sparseOff)
	x.sparseAt = make([]uint32, 0, len(x.sparseOff))
	for off := 0; off < len(x.sparse); off += 1 + int(x.sparse[off]) {
		x.sparseAt = append(x.sparseAt, uint32(off))
	}
	return x, nil
}

// recordReader reads the records of one run or index.
type recordReader struct {
	r   *bufio.Reader
	buf [256]byte
	key []byte
}

// readers keeps recordReaders between pages: a walk reads a page at a
// time.
var readers sync.Pool

func newRecordReader(f *os.File, off, n int64) *recordReader {
	src := io.NewSectionReader(f, off, n)
	if rr, _ := readers.Get().(*recordReader); rr != nil && rr.r.Size() == mergeBuf {
		rr.r.Reset(src)
		return rr
	}
	return &recordReader{r: bufio.NewReaderSize(src, mergeBuf)}
}

// done returns rr to the pool.
func (rr *recordReader) done() {
	rr.r.Reset(nil)
	rr.key = nil
	readers.Put(rr)
}

// next reads the next record into rr.key; it returns io.EOF at the end.
func (rr *recordReader) next() error {
	n, err := rr.r.ReadByte()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("listing index holds an empty key")
	}
	if _, err := io.ReadFull(rr.r, rr.buf[:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	rr.key = rr.buf[:n]
	return nil
}

// runHeap orders the current keys of the runs being merged.
type runHeap []*recordReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].key, h[j].key) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*recordReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge calls emit with the keys of runs of f in ascending order.
func merge(f *os.File, runs []run, emit func([]byte) error) error {
	h := make(runHeap, 0, len(runs))
	defer func() {
		for _, rr := range h {
			rr.done()
		}
	}()
	for _, r := range runs {
		rr := newRecordReader(f, r.off, r.n)
		switch err := rr.next(); {
		case err == io.EOF:
			rr.done()
		case err != nil:
			rr.done()
			return err
		default:
			h = append(h, rr)
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		rr := h[0]
		if err := emit(rr.key); err != nil {
			return err
		}
		switch err := rr.next(); {
		case err == io.EOF:
			heap.Pop(&h).(*recordReader).done()
		case err != nil:
			return err
		default:
			heap.Fix(&h, 0)
		}
	}
	return nil
}

// diskIndex is a directory's sorted keys in an unlinked file, with every
// sparseStride-th key in memory.
type diskIndex struct {
	f         *spillFile
	size      int64    // bytes of records
	n         int      // records
	sparse    []byte   // the kept keys, each a length byte and the key
	sparseAt  []uint32 // offset of each kept key in sparse
	sparseOff []int64  // offset of each kept key's record in f
}

func (x *diskIndex) sparseKey(i int) []byte {
	o := x.sparseAt[i]
	return x.sparse[o+1 : o+1+uint32(x.sparse[o])]
}

func (x *diskIndex) memSize() int { return cap(x.sparse) + 4*cap(x.sparseAt) + 8*cap(x.sparseOff) }

func (x *diskIndex) close() { x.f.close() }

// entries yields the keys from the first holding an ID after rel (see
// dirList.firstAfter), or every key when all.
func (x *diskIndex) entries(rel string, all bool) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		r := []byte(rel)
		start := int64(0)
		if !all {
			// The last kept key at or before rel: the entry sought is
			// after it (a directory holding rel is a prefix of rel, so
			// no other key lies between it and rel).
			i := sort.Search(len(x.sparseAt), func(j int) bool { return bytes.Compare(x.sparseKey(j), r) > 0 })
			if i > 0 {
				start = x.sparseOff[i-1]
			}
		}
		rr := newRecordReader(x.f.File, start, x.size-start)
		defer rr.done()
		skipping := !all
		for {
			err := rr.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("read the listing index: %w", err))
				return
			}
			if skipping {
				k := rr.key
				if bytes.Compare(k, r) <= 0 && !(k[len(k)-1] == '/' && bytes.HasPrefix(r, k)) {
					continue
				}
				skipping = false
			}
			if !yield(rr.key, nil) {
				return
			}
		}
	}
}
