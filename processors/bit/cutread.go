package bit

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/millfleet/mill/pkg/storage"
)

// A read that breaks mid-body (a connection reset, a response cut short
// of its length: io.ErrUnexpectedEOF) is not a failed check: the check
// reads on from where its hash stands — the bytes hashed so far are whole
// parts, in order — with a ranged read pinned to the revision the first
// read saw (storage.OpenAt), so what is hashed is one revision or the
// read fails with storage.ErrChanged. At most maxReadOns times per check;
// after that, or on a provider that cannot read from an offset, the error
// is the check's (Workman retries it).
const maxReadOns = 5

// brokenRead reports whether err is a transport fault of a read in
// progress rather than an answer of the store or the end of ctx.
func brokenRead(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, storage.ErrChanged) {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout())
}

// readOn continues a read of info's revision that broke with err after
// sums.Len() bytes, writing the rest to w; it returns how many times it
// read on and the read's final error (nil when the rest was read).
func (ob *Observer) readOn(ctx context.Context, prov storage.Provider, space, id string, info *storage.Info, sums *storage.Sums,
	w io.Writer, t storage.Transfer, err error) (int, error) {
	if _, ok := storage.Unwrap(prov).(storage.RangeReader); !ok || info.Revision == "" {
		return 0, err
	}
	n := 0
	for ; n < maxReadOns && brokenRead(ctx, err); n++ {
		var rc io.ReadCloser
		var at *storage.Info
		rc, at, err = storage.OpenAt(storage.WithNewConnection(ctx), prov, space, id, sums.Len(), info.Revision, t)
		if err != nil {
			continue
		}
		if at.Size != info.Size || at.Revision != info.Revision {
			rc.Close()
			return n + 1, storage.ErrChanged
		}
		_, err = storage.ReadAll(ctx, rc, info.Size-sums.Len(), t, w)
		rc.Close()
	}
	return n, err
}
