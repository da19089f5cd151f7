package objstore

import (
	"context"
	"fmt"
	"io"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
)

// Put is the front of a provider's put: it checks the item's name, the
// expected MD5, the properties and the space before reading any content,
// then reads up to Threshold bytes and hands the content to Whole (all of
// it, buffered) or to Stream (the rest of a larger or unknown-size
// content, head first). want is the expected MD5 normalised ("": none).
type Put struct {
	Layout    Layout
	Threshold int64
	// CheckProps refuses properties the service cannot store.
	CheckProps func(want string, props map[string]string) error
	// NeedSpace returns ErrNotFound unless the space exists.
	NeedSpace func(ctx context.Context, space string) error
	Whole     func(ctx context.Context, key, space, id string, data []byte, want string, opts storage.PutOptions) (*storage.Info, error)
	Stream    func(ctx context.Context, key, space, id string, r io.Reader, want string, opts storage.PutOptions) (*storage.Info, error)
}

// Run writes the item (unwrapped errors).
func (p Put) Run(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	key, err := p.Layout.ContentKey(space, id)
	if err != nil {
		return nil, err
	}
	want, err := storage.NormalizeMD5(opts.Checksum)
	if err != nil {
		return nil, err
	}
	if err := p.CheckProps(want, opts.Properties); err != nil {
		return nil, err
	}
	if err := p.NeedSpace(ctx, space); err != nil {
		return nil, err
	}
	head, whole, rest, err := Head(ctx, r, opts.Size, p.Threshold)
	if err != nil {
		return nil, err
	}
	if whole {
		return p.Whole(ctx, key, space, id, head, want, opts)
	}
	return p.Stream(ctx, key, space, id, rest, want, opts)
}

// CheckMD5 compares the MD5 Mill measured with the expected one ("":
// none expected).
func CheckMD5(got, want string) error {
	if want != "" && got != want {
		return fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, got, want)
	}
	return nil
}

// UploadRules are a store's defaults and its service's limits for its
// Config's storage.Upload.
type UploadRules struct {
	Default      storage.Upload
	MaxThreshold int64
	// PartSize is within MinPartSize..MaxPartSize and, when PartUnit is
	// not 0, a multiple of it.
	MinPartSize, MaxPartSize, PartUnit int64
	MaxStreams                         int
}

// WithDefaults returns u with its zero fields set to r's defaults.
func (r UploadRules) WithDefaults(u storage.Upload) storage.Upload {
	defaults.Fill(&u, r.Default)
	return u
}

// Check records in p (the store Config's problems) every field of u
// outside r's limits.
func (r UploadRules) Check(p *validate.Problems, u storage.Upload) {
	p.Check(u.Threshold > 0 && u.Threshold <= r.MaxThreshold, "Threshold", u.Threshold, "be within 1..%d", r.MaxThreshold)
	if r.PartUnit != 0 {
		p.Check(u.PartSize >= r.MinPartSize && u.PartSize <= r.MaxPartSize && u.PartSize%r.PartUnit == 0, "PartSize", u.PartSize, "be a multiple of %d within %d..%d", r.PartUnit, r.MinPartSize, r.MaxPartSize)
	} else {
		p.Check(u.PartSize >= r.MinPartSize && u.PartSize <= r.MaxPartSize, "PartSize", u.PartSize, "be within %d..%d", r.MinPartSize, r.MaxPartSize)
	}
	p.Check(u.Streams >= 1 && u.Streams <= r.MaxStreams, "Streams", u.Streams, "be within 1..%d", r.MaxStreams)
}
