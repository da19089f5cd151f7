package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/millfleet/mill/internal/base/defaults"
)

// ErrChanged: the item was rewritten while it was being read in parts (its
// Info.Revision changed); nothing read should be used.
var ErrChanged = errors.New("storage: item changed during the transfer")

// Transfer defaults: four parts of 8 MiB in flight (32 MiB of buffers),
// sized like the AWS SDKs' transfer managers (5 to 10 requests in flight;
// the AWS CLI's 8 MiB parts). A transfer's peak memory is
// Streams·PartSize of buffers plus the process's constant (53-56 MiB
// for a Mill binary, most of it its mapped code; see MemoryBound): 92 MiB
// with these defaults, within a 100 MiB budget for a copy of any size. 16
// MiB parts (64 MiB of buffers) passed 100 MiB.
const (
	DefaultStreams  = 4
	DefaultPartSize = 8 << 20
)

// MemoryConstMiB is the constant of MemoryBound: what a Mill process
// holds besides its transfer buffers, measured on a 1 GiB put and get
// (53 MiB) and a 1 GiB streamed copy (56 MiB): mapped code about 33 MiB, the Go runtime and SDK clients about
// 12 MiB, and the request garbage the GC lets pile up between
// collections (the pooled buffers count as live heap, so the heap may
// grow by about as much again before a collection), with slack.
const MemoryConstMiB = 60

// MemoryBound is the peak resident memory, in MiB, of a process running
// one transfer of t (its zero fields the defaults): t.Streams buffers of
// t.PartSize, plus MemoryConstMiB. The big-object benchmarks check their
// peak RSS against it.
func MemoryBound(t Transfer) float64 {
	t = t.WithDefaults()
	return float64(int64(t.Streams)*t.PartSize)/(1<<20) + MemoryConstMiB
}

// Transfer tunes how an item's bytes move: Streams parts of PartSize bytes
// in flight. Zero fields take the defaults.
type Transfer struct {
	Streams  int
	PartSize int64
}

// defaultTransfer holds the values WithDefaults gives a Transfer's zero or
// negative fields.
var defaultTransfer = Transfer{Streams: DefaultStreams, PartSize: DefaultPartSize}

// WithDefaults returns t with zero or negative fields set to the defaults.
func (t Transfer) WithDefaults() Transfer {
	defaults.FillNonPositive(&t, defaultTransfer)
	return t
}

// Upload tunes how an object store (s3store, gcsstore, azstore) writes an
// item: content up to Threshold bytes is buffered whole, checked and sent
// in one request; larger content goes in parts of PartSize bytes, Streams
// of them in flight. Threshold bounds the buffer of a one-request write,
// Streams·PartSize that of a write in parts. Each store's Config embeds
// it; the store sets its zero fields to the store's defaults and bounds
// them by its service's limits (see the store's Config).
type Upload struct {
	Threshold int64
	Transfer
}

// RangeReader is implemented by providers that can read part of an item,
// which lets Open read big items with parallel requests.
type RangeReader interface {
	// GetRange streams the n bytes of the item from byte off (fewer at
	// the item's end) and returns the Info of the whole item. When
	// revision is not "", the item must still be that revision
	// (Info.Revision), else ErrChanged. A range starting at the end of
	// the item (an empty item read from 0) is an empty stream.
	GetRange(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *Info, error)
}

// Open opens an item for reading. When the provider (or the one it wraps,
// see Unwrap) is a RangeReader, the first part is read with one request
// (which also gives the Info) and the returned reader also implements:
//
//   - io.ReaderAt, by ranged reads of the same revision (ErrChanged when
//     the item was rewritten meanwhile), so a writer can fetch parts in
//     parallel (s3store's multipart put does);
//   - io.WriterTo, writing the item in order while t.Streams ranged reads
//     of t.PartSize run ahead (memory t.Streams·t.PartSize).
//
// Otherwise it is the provider's Get stream. The caller closes the reader;
// reads end with ctx.
func Open(ctx context.Context, p Provider, space, id string, t Transfer) (io.ReadCloser, *Info, error) {
	rr, ok := Unwrap(p).(RangeReader)
	if !ok {
		return p.Get(ctx, space, id)
	}
	t = t.WithDefaults()
	first, info, err := rr.GetRange(ctx, space, id, 0, t.PartSize, "")
	if err != nil {
		return nil, nil, err
	}
	return &rangedItem{ctx: ctx, rr: rr, space: space, id: id, info: info, t: t, first: first, firstN: min(t.PartSize, info.Size)}, info, nil
}

// OpenAt is Open from byte off of the given revision of the item (a
// resumed transfer's): a RangeReader only. The reader implements
// io.WriterTo as Open's does, from off.
func OpenAt(ctx context.Context, p Provider, space, id string, off int64, revision string, t Transfer) (io.ReadCloser, *Info, error) {
	rr, ok := Unwrap(p).(RangeReader)
	if !ok {
		return nil, nil, fmt.Errorf("storage: %s/%s: the %s provider cannot read from an offset", space, QuoteID(id), p.Kind())
	}
	t = t.WithDefaults()
	first, info, err := rr.GetRange(ctx, space, id, off, t.PartSize, revision)
	if err != nil {
		return nil, nil, err
	}
	it := &rangedItem{ctx: ctx, rr: rr, space: space, id: id, info: info, t: t, first: first, start: off, off: off}
	it.firstN = max(0, min(t.PartSize, info.Size-off))
	return it, info, nil
}

// rangedItem reads one revision of an item by ranges (see Open).
type rangedItem struct {
	ctx       context.Context
	rr        RangeReader
	space, id string
	info      *Info
	t         Transfer

	mu     sync.Mutex
	first  io.ReadCloser // bytes [start, start+firstN); nil once used or closed
	start  int64
	firstN int64
	off    int64         // sequential position
	cur    io.ReadCloser // the sequential stream after first
}

var (
	_ io.ReaderAt = (*rangedItem)(nil)
	_ io.WriterTo = (*rangedItem)(nil)
)

// takeFirst returns the first response's body when it holds exactly
// [off, off+n), and forgets it; otherwise it closes it.
func (r *rangedItem) takeFirst(off, n int64) io.ReadCloser {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.first
	r.first = nil
	if f != nil && (off != r.start || n != r.firstN) {
		f.Close()
		return nil
	}
	return f
}

// ReadAt implements io.ReaderAt; safe for concurrent use.
func (r *rangedItem) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.info.Size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.info.Size-off)
	body := r.takeFirst(off, want)
	if body == nil {
		var err error
		body, _, err = r.rr.GetRange(r.ctx, r.space, r.id, off, want, r.info.Revision)
		if err != nil {
			return 0, err
		}
	}
	defer body.Close()
	n, err := io.ReadFull(body, p[:want])
	if err != nil {
		return n, fmt.Errorf("storage: read %s/%s at %d: %w", r.space, QuoteID(r.id), off, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// Read implements io.Reader: the first part, then one stream of the rest.
func (r *rangedItem) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.off >= r.info.Size {
			return 0, io.EOF
		}
		if r.first != nil {
			n, err := r.first.Read(p)
			r.off += int64(n)
			if err == io.EOF || r.off >= r.start+r.firstN {
				r.first.Close()
				r.first = nil
				if n > 0 {
					return n, nil
				}
				continue
			}
			return n, err
		}
		if r.cur == nil {
			body, _, err := r.rr.GetRange(r.ctx, r.space, r.id, r.off, r.info.Size-r.off, r.info.Revision)
			if err != nil {
				return 0, err
			}
			r.cur = body
		}
		n, err := r.cur.Read(p)
		r.off += int64(n)
		if err == io.EOF && r.off < r.info.Size {
			err = fmt.Errorf("storage: read %s/%s: %w at %d of %d bytes", r.space, QuoteID(r.id), io.ErrUnexpectedEOF, r.off, r.info.Size)
		}
		return n, err
	}
}

// WriteTo implements io.WriterTo: the item from the current position, in
// order, with t.Streams ranged reads in flight.
func (r *rangedItem) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	start := r.off
	r.mu.Unlock()
	var written int64
	err := Parts{
		Start: start, End: r.info.Size, Size: r.t.PartSize, Streams: r.t.Streams,
		Fill: func(_ context.Context, _ int, off int64, buf []byte) (int, error) {
			n, err := r.ReadAt(buf, off)
			if err == io.EOF && n == len(buf) {
				err = nil
			}
			return n, err
		},
		InOrder: func(_ int, _ int64, p []byte) error {
			n, err := w.Write(p)
			written += int64(n)
			return err
		},
	}.Run(r.ctx)
	r.mu.Lock()
	r.off = start + written
	r.mu.Unlock()
	return written, err
}

// Close implements io.Closer.
func (r *rangedItem) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []io.ReadCloser{r.first, r.cur} {
		if c != nil {
			c.Close()
		}
	}
	r.first, r.cur = nil, nil
	return nil
}

// ReadAll writes the content of r — size bytes, or -1 when unknown — to w
// in order, with t.Streams parts of t.PartSize read ahead while w works
// on the parts before them: by ranged reads when r came from Open on a
// RangeReader, by ReadAt when r is an io.ReaderAt of known size (a file),
// else one part at a time from r. Memory is t.Streams·t.PartSize. It
// returns the bytes written; content longer or shorter than size is an
// error.
func ReadAll(ctx context.Context, r io.Reader, size int64, t Transfer, w io.Writer) (int64, error) {
	t = t.WithDefaults()
	var written int64
	ps := Parts{Start: 0, End: size, Size: t.PartSize, Streams: t.Streams,
		InOrder: func(_ int, _ int64, p []byte) error {
			n, err := w.Write(p)
			written += int64(n)
			return err
		}}
	ra, isRA := r.(io.ReaderAt)
	switch ri, ok := r.(*rangedItem); {
	case ok:
		if left := ri.info.Size - ri.start; size >= 0 && left != size {
			return 0, fmt.Errorf("storage: read %s/%s: %d bytes from %d, expected %d", ri.space, QuoteID(ri.id), left, ri.start, size)
		}
		return ri.WriteTo(w)
	case isRA && size >= 0:
		ps.Fill = func(_ context.Context, _ int, off int64, buf []byte) (int, error) {
			n, err := ra.ReadAt(buf, off)
			if n == len(buf) {
				return n, nil
			}
			if err == io.EOF || err == nil {
				err = fmt.Errorf("content ended at %d bytes, expected %d: %w", off+int64(n), size, io.ErrUnexpectedEOF)
			}
			return n, err
		}
	default:
		ps.SerialFill = true
		if size >= 0 {
			ps.End = -1 // read to the end, to see a longer stream
		}
		ps.Fill = func(_ context.Context, _ int, _ int64, buf []byte) (int, error) {
			n, err := io.ReadFull(r, buf)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = nil
			}
			return n, err
		}
	}
	if err := ps.Run(ctx); err != nil {
		return written, err
	}
	if isRA && size >= 0 && !ps.SerialFill {
		var one [1]byte
		if n, _ := ra.ReadAt(one[:], size); n > 0 {
			return written, fmt.Errorf("content is longer than the %d bytes expected", size)
		}
	}
	if size >= 0 && written != size {
		return written, fmt.Errorf("content is %d bytes, expected %d", written, size)
	}
	return written, nil
}
