package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrSuspended: a transfer stopped at a checkpoint because its caller asked
// it to (Parts.Stop, Resume.Stop); running it again with the same
// checkpoint resumes it.
var ErrSuspended = errors.New("storage: transfer suspended at a checkpoint")

// Parts moves a byte range in parts with bounded memory: each part is
// filled into one of Streams buffers of Size bytes (Fill: parallel, or one
// at a time in order when SerialFill), handed to InOrder strictly in order
// on Run's goroutine (hashing), then to After (an upload), while the
// following parts are filled. A buffer is reused once its part's After
// returns, so at most Streams parts are anywhere in the pipeline and the
// memory is Streams·Size bytes.
type Parts struct {
	// Start and End delimit the range; End < 0 means unknown (SerialFill
	// only): the range ends at the first part Fill does not fill whole.
	Start, End int64
	// Size of a part (the last may be shorter) and Streams, the parts in
	// flight (both at least 1).
	Size    int64
	Streams int
	// SerialFill calls Fill for one part at a time, in order, on one
	// goroutine (a sequential reader); otherwise Fill runs for up to
	// Streams parts at once (ranged reads).
	SerialFill bool
	// Fill fills buf with the part at off and returns how many bytes it
	// read. Fewer than len(buf) without an error ends the range (only
	// expected of SerialFill; otherwise it is the caller's to report).
	Fill func(ctx context.Context, i int, off int64, buf []byte) (int, error)
	// InOrder gets the parts in order (may be nil). A part i > 0 that
	// Fill left empty is not passed on.
	InOrder func(i int, off int64, p []byte) error
	// After gets each part after InOrder, concurrently with the following
	// parts (may be nil).
	After func(ctx context.Context, i int, off int64, p []byte) error
	// Stop, when closed, starts no new part: Run finishes the parts
	// already started and returns ErrSuspended (nil: never).
	Stop <-chan struct{}
}

// Part buffers are shared by the transfers of a process, one pool per
// part size: a worker running transfers one after another reuses the same
// Streams·Size bytes instead of leaving each transfer's buffers for the
// garbage collector, which let the heap reach twice that between two
// collections.
var (
	buffersMu sync.Mutex
	buffers   = map[int64]*sync.Pool{}
)

func bufferPool(size int64) *sync.Pool {
	buffersMu.Lock()
	defer buffersMu.Unlock()
	p := buffers[size]
	if p == nil {
		p = &sync.Pool{New: func() any { b := make([]byte, size); return &b }}
		buffers[size] = p
	}
	return p
}

func getBuffer(size int64) []byte { return *bufferPool(size).Get().(*[]byte) }

func putBuffer(b []byte) { bufferPool(int64(cap(b))).Put(&b) }

func (ps Parts) validate() error {
	var errs []error
	if ps.Size < 1 || ps.Streams < 1 {
		errs = append(errs, fmt.Errorf("storage: parts of %d bytes, %d streams", ps.Size, ps.Streams))
	}
	if ps.Fill == nil {
		errs = append(errs, errors.New("storage: parts: no Fill"))
	}
	if ps.End < 0 && !ps.SerialFill {
		errs = append(errs, errors.New("storage: parts: an unknown end needs SerialFill"))
	}
	return errors.Join(errs...)
}

// Run moves the range. The first error (of Fill, InOrder or After, or
// ctx's) cancels the parts in flight and is returned once they have all
// returned; Run leaves no goroutine behind.
func (ps Parts) Run(ctx context.Context) error {
	if err := ps.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	type slot struct {
		i      int
		off    int64
		buf    []byte
		n      int
		err    error
		filled chan struct{}
	}
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
			cancel(err)
		}
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	pool := make(chan []byte, ps.Streams)
	for range ps.Streams {
		pool <- nil // allocated on first use
	}
	order := make(chan *slot, ps.Streams)
	suspended, whole := false, false
	go func() {
		defer close(order)
		off := ps.Start
		for i := 0; ps.End < 0 || off < ps.End; i++ {
			var buf []byte
			select {
			case <-ctx.Done():
				return
			case <-ps.Stop:
				suspended = true
				return
			case buf = <-pool:
			}
			select {
			case <-ps.Stop:
				// Closed while waiting for a buffer: a stop
				// wins over the next part.
				pool <- buf
				suspended = true
				return
			default:
			}
			if buf == nil {
				buf = getBuffer(ps.Size)
			}
			n := ps.Size
			if ps.End >= 0 {
				n = min(n, ps.End-off)
			}
			s := &slot{i: i, off: off, buf: buf[:n], filled: make(chan struct{})}
			if ps.SerialFill {
				s.n, s.err = ps.Fill(ctx, i, off, s.buf)
				close(s.filled)
				order <- s
				if s.err != nil || int64(s.n) < n {
					whole = s.err == nil
					return
				}
			} else {
				go func() {
					s.n, s.err = ps.Fill(ctx, s.i, s.off, s.buf)
					if s.err != nil {
						// At once, not in order: the parts before
						// this one stop too.
						fail(s.err)
					}
					close(s.filled)
				}()
				order <- s
			}
			off += n
		}
		whole = true
	}()

	var after sync.WaitGroup
	for s := range order {
		<-s.filled
		release := func() { pool <- s.buf[:cap(s.buf)] }
		if s.err != nil {
			fail(s.err)
		}
		if failed() || (s.n == 0 && s.i > 0) {
			release()
			continue
		}
		p := s.buf[:s.n]
		if ps.InOrder != nil {
			if err := ps.InOrder(s.i, s.off, p); err != nil {
				fail(err)
				release()
				continue
			}
		}
		if ps.After == nil {
			release()
			continue
		}
		after.Go(func() {
			defer release()
			if err := ps.After(ctx, s.i, s.off, p); err != nil {
				fail(err)
			}
		})
	}
	after.Wait()
	// Every part has been released: the buffers go back for the next
	// transfer.
	for range ps.Streams {
		if buf := <-pool; buf != nil {
			putBuffer(buf)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case first != nil:
		return first
	case suspended:
		return ErrSuspended
	case !whole:
		return context.Cause(ctx)
	}
	return nil
}
