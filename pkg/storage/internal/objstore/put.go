package objstore

import (
	"context"
	"fmt"
	"io"

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
func CheckMD5(sums *storage.Sums, want string) error {
	if want != "" && sums.MD5() != want {
		return fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, sums.MD5(), want)
	}
	return nil
}
