// Package ctxio makes a blocking io.Reader give way to a cancelled context.
package ctxio

import (
	"context"
	"io"
)

// chunk bounds the reader's own buffer (and so one underlying Read).
const chunk = 256 << 10

type result struct {
	n   int
	err error
}

// Reader reads from an underlying reader but returns ctx.Err() as soon as
// ctx is done, even while the underlying Read blocks. The blocked Read is
// left to finish in its own goroutine, into the Reader's private buffer,
// and its result is discarded: after ctx is done every Read fails. Memory is
// one buffer of at most 256 KiB. A Reader is not safe for concurrent use.
type Reader struct {
	ctx context.Context
	r   io.Reader
	buf []byte
	res chan result
	err error
}

// NewReader returns r itself when ctx can never be cancelled, else a
// Reader.
func NewReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return &Reader{ctx: ctx, r: r, res: make(chan result, 1)}
}

// Read implements io.Reader.
func (c *Reader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.buf == nil {
		c.buf = make([]byte, chunk)
	}
	want := min(len(p), len(c.buf))
	go func(b []byte) {
		n, err := c.r.Read(b)
		c.res <- result{n, err}
	}(c.buf[:want])
	select {
	case res := <-c.res:
		n := copy(p, c.buf[:res.n])
		if res.err != nil && res.err != io.EOF {
			c.err = res.err
		}
		return n, res.err
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		return 0, c.err
	}
}
