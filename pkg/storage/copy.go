package storage

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// ServerSideCopier is implemented by providers that can copy an item from
// another provider without the bytes passing through this process (S3
// CopyObject between stores on the same client). Copy uses it when the
// destination implements it.
type ServerSideCopier interface {
	// ServerSideCopy copies srcSpace/srcID of src to dstSpace/dstID of the
	// receiver, keeping the MD5, mimetype and user properties, and returns
	// the new item's Info. It returns ok == false and a nil error, having
	// done nothing, when it cannot copy from src that way (another kind of
	// provider, another endpoint or credentials); the caller then streams.
	// Errors are the portable ones (ErrNotFound for a missing source item
	// or destination space).
	ServerSideCopy(ctx context.Context, src Provider, srcSpace, srcID, dstSpace, dstID string) (info *Info, ok bool, err error)
}

// Seen is what the caller of a copy has just read of its two items
// (Head), so that the copy need not read them again.
type Seen struct {
	// Source is the source item as read, or nil (not read).
	Source *Info
	// Dest is the destination item as read; with DestRead and Dest nil,
	// the destination was read and found absent.
	Dest     *Info
	DestRead bool
}

// SeenCopier is a ServerSideCopier that takes what the caller has read
// of the items instead of reading them again. A provider uses an Info it
// was given only under a precondition on its Revision (a conditional
// request): an item rewritten since it was read fails the copy with
// ErrChanged, an item that appeared where none was read is never
// overwritten unseen.
type SeenCopier interface {
	ServerSideCopySeen(ctx context.Context, src Provider, srcSpace, srcID, dstSpace, dstID string, seen Seen) (info *Info, ok bool, err error)
}

// Unwrapper is implemented by decorators (such as audited) to expose the
// provider they wrap, so that Copy can recognise a wrapped source for a
// server-side copy. A decorator that must see writes should implement
// ServerSideCopier itself by delegating, rather than let Copy unwrap the
// destination: Copy only ever unwraps the source.
type Unwrapper interface {
	Unwrap() Provider
}

// Unwrap follows Unwrapper until it reaches a provider that wraps nothing.
func Unwrap(p Provider) Provider {
	for {
		u, ok := p.(Unwrapper)
		if !ok {
			return p
		}
		p = u.Unwrap()
	}
}

// CopyOptions tune a streamed Copy (a server-side copy ignores them).
type CopyOptions struct {
	// Transfer: parts in flight and their size, for the source's ranged
	// reads and the destination's multipart upload.
	Transfer Transfer
	// Resume makes the copy resumable (see PutOptions.Resume); Copy sets
	// its Source from the source item.
	Resume *Resume
	// Source is the source item's Info as the caller just read it (Head),
	// or nil. A resumable copy (Resume set, Source.Size at least
	// Resume.MinSize) of a RangeReader source then reads that revision
	// only (ErrChanged when it was rewritten since) and sends no request
	// before the destination asks for bytes: a copy resumed from a
	// checkpoint fetches nothing before it. Otherwise Open's first ranged
	// read, which gives the Info, starts the copy. A server-side copy
	// into a SeenCopier uses it instead of reading the source again.
	Source *Info
	// Dest and DestRead are the destination item as the caller just read
	// it (Seen): a server-side copy into a SeenCopier, or a streamed one
	// (PutOptions.Replaces), then does not read it again before writing.
	Dest     *Info
	DestRead bool
}

// Copy copies content item id from srcSpace of src to dstSpace of dst under
// the same ID, with its mimetype and user properties, and returns the new
// item's Info.
//
// When dst implements ServerSideCopier and accepts the source, the copy is
// server-side. Otherwise the bytes stream from the source (Open: parallel
// ranged reads when the source can) to dst.Put with bounded memory; the
// put verifies the source's recorded MD5, so content that went sour at the
// source is refused (ErrChecksumMismatch, nothing committed) instead of
// being duplicated. When the source records no MD5, Copy hashes the stream
// itself and checks the destination agrees.
func Copy(ctx context.Context, src Provider, srcSpace, id string, dst Provider, dstSpace string) (*Info, error) {
	return CopyWith(ctx, src, srcSpace, id, dst, dstSpace, CopyOptions{})
}

// CopyWith is Copy with options.
func CopyWith(ctx context.Context, src Provider, srcSpace, id string, dst Provider, dstSpace string, o CopyOptions) (*Info, error) {
	if c, ok := dst.(ServerSideCopier); ok {
		var info *Info
		var done bool
		var err error
		if sc, ok := dst.(SeenCopier); ok {
			info, done, err = sc.ServerSideCopySeen(ctx, Unwrap(src), srcSpace, id, dstSpace, id,
				Seen{Source: o.Source, Dest: o.Dest, DestRead: o.DestRead})
		} else {
			info, done, err = c.ServerSideCopy(ctx, Unwrap(src), srcSpace, id, dstSpace, id)
		}
		if err != nil {
			return nil, fmt.Errorf("storage: copy %s from %s to %s: %w", QuoteID(id), srcSpace, dstSpace, err)
		}
		if done {
			return info, nil
		}
	}
	rc, info, err := openSource(ctx, src, srcSpace, id, o)
	if err != nil {
		return nil, fmt.Errorf("storage: copy %s from %s: %w", QuoteID(id), srcSpace, err)
	}
	defer rc.Close()
	opts := PutOptions{
		Size:         info.Size,
		Checksum:     info.Checksum,
		MimeType:     info.MimeType,
		Properties:   UserProperties(info.Properties),
		Transfer:     o.Transfer,
		Replaces:     o.Dest,
		ReplacesRead: o.DestRead,
	}
	if o.Resume != nil && info.Checksum != "" {
		r := *o.Resume
		r.Source = fmt.Sprintf("%s %d %s", info.Revision, info.Size, info.Checksum)
		opts.Resume = &r
	}
	var r io.Reader = rc
	var h hash.Hash
	if info.Checksum == "" {
		// Nothing for the put to verify: hash the stream to check what
		// the destination records.
		h = md5.New()
		r = io.TeeReader(rc, h)
	}
	out, err := dst.Put(ctx, dstSpace, id, r, opts)
	if err != nil {
		return nil, fmt.Errorf("storage: copy %s to %s: %w", QuoteID(id), dstSpace, err)
	}
	want := info.Checksum
	if h != nil {
		want = hex.EncodeToString(h.Sum(nil))
	}
	if out.Checksum != want {
		return nil, fmt.Errorf("storage: copy %s to %s: streamed MD5 %s, destination recorded %s: %w", QuoteID(id), dstSpace, want, out.Checksum, ErrChecksumMismatch)
	}
	return out, nil
}

// openSource opens a copy's source: without a request when the caller's
// Info is usable (see CopyOptions.Source), else with Open.
func openSource(ctx context.Context, src Provider, space, id string, o CopyOptions) (io.ReadCloser, *Info, error) {
	if si := o.Source; si != nil && si.Revision != "" && o.Resume != nil && si.Size >= o.Resume.MinSize {
		if rr, ok := Unwrap(src).(RangeReader); ok {
			return &rangedItem{ctx: ctx, rr: rr, space: space, id: id, info: si, t: o.Transfer.WithDefaults()}, si, nil
		}
	}
	return Open(ctx, src, space, id, o.Transfer)
}
