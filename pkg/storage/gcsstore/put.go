package gcsstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	gcs "cloud.google.com/go/storage"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// sizeErr reports content whose length is not the promised size.
func sizeErr(got, want int64) error {
	return objstore.SizeErr("gcsstore", got, want)
}

// putSmall checks buffered content and sends it in one request with its
// MD5, which GCS verifies.
func (s *Store) putSmall(ctx context.Context, key, space, id string, data []byte, want string, opts storage.PutOptions) (*storage.Info, error) {
	if err := sizeErr(int64(len(data)), opts.Size); err != nil {
		return nil, err
	}
	sums := storage.NewSums()
	sums.Write(data)
	if err := objstore.CheckMD5(sums, want); err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	a, err := s.write(ctx, s.bucket.Object(key), bytes.NewReader(data), sums, opts, 0, nil)
	if err != nil {
		undo()
		return nil, err
	}
	return infoOf(a, id), nil
}

// putLarge streams content as a resumable upload of ChunkSize chunks. With
// an expected MD5 it writes the item itself, declaring the MD5 (GCS refuses
// the upload when the bytes disagree) and checking it before the last
// chunk is sent. Without one it uploads to .mill-tmp/, then copies
// (server side) to the item with the MD5 it measured.
func (s *Store) putLarge(ctx context.Context, key, space, id string, r io.Reader, want string, opts storage.PutOptions) (*storage.Info, error) {
	sums := storage.NewSums()
	if want != "" {
		undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
		if err != nil {
			return nil, err
		}
		a, err := s.write(ctx, s.bucket.Object(key), r, sums, opts, s.cfg.ChunkSize, func() error {
			if err := sizeErr(sums.Len(), opts.Size); err != nil {
				return err
			}
			return objstore.CheckMD5(sums, want)
		})
		if err != nil {
			undo()
			return nil, err
		}
		return infoOf(a, id), nil
	}
	tmp := s.layout.TmpKey(randHex())
	defer s.deleteKey(ctx, tmp)
	if _, err := s.write(ctx, s.bucket.Object(tmp), r, sums, storage.PutOptions{Size: opts.Size, MimeType: opts.MimeType, Properties: opts.Properties}, s.cfg.ChunkSize, func() error {
		return sizeErr(sums.Len(), opts.Size)
	}); err != nil {
		return nil, err
	}
	meta, err := metadata(sums.MD5(), storage.CRC64NVMEBase64(sums.CRC64NVME()), opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	a, err := s.copyObject(ctx, tmp, key, meta, mimeOr(opts.MimeType))
	if err != nil {
		undo()
		return nil, err
	}
	if hex.EncodeToString(a.MD5) != sums.MD5() {
		return nil, fmt.Errorf("%w: GCS reports MD5 %x for the bytes Mill sent with MD5 %s", storage.ErrChecksumMismatch, a.MD5, sums.MD5())
	}
	return infoOf(a, id), nil
}

// write uploads r to o, hashing it into sums. chunk 0 sends it in one
// request with its MD5 (known from sums, which already hold the bytes);
// otherwise check runs when r ends, before the last chunk leaves: an error
// abandons the upload, so nothing is committed.
func (s *Store) write(ctx context.Context, o *gcs.ObjectHandle, r io.Reader, sums *storage.Sums, opts storage.PutOptions, chunk int, check func() error) (*gcs.ObjectAttrs, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := o.NewWriter(ctx)
	w.ChunkSize = chunk
	w.ContentType = mimeOr(opts.MimeType)
	md5 := ""
	if chunk == 0 {
		md5 = sums.MD5()
		b, _ := hex.DecodeString(md5)
		w.MD5 = b
	} else if want, _ := storage.NormalizeMD5(opts.Checksum); want != "" {
		md5 = want
		b, _ := hex.DecodeString(want)
		w.MD5 = b
	}
	crc := ""
	if chunk == 0 {
		crc = storage.CRC64NVMEBase64(sums.CRC64NVME())
	}
	meta, err := metadata(md5, crc, opts.Properties)
	if err != nil {
		return nil, err
	}
	w.Metadata = meta
	src := r
	if chunk != 0 {
		src = io.TeeReader(r, sums)
	}
	// Cancelling the writer's context abandons the upload (nothing is
	// committed); Close then waits for it to end.
	if _, err := io.Copy(w, src); err != nil {
		cancel(err)
		_ = w.Close()
		return nil, errors.Join(err, context.Cause(ctx))
	}
	if check != nil {
		if err := check(); err != nil {
			cancel(err)
			_ = w.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		if ctx.Err() != nil {
			return nil, errors.Join(err, context.Cause(ctx))
		}
		return nil, err
	}
	return w.Attrs(), nil
}

// copyObject copies src to dst server side (a rewrite) with metadata meta
// and content type mime, and returns the new object's attributes.
func (s *Store) copyObject(ctx context.Context, src, dst string, meta map[string]string, mime string) (*gcs.ObjectAttrs, error) {
	c := s.bucket.Object(dst).CopierFrom(s.bucket.Object(src))
	c.Metadata = meta
	c.ContentType = mime
	return c.Run(ctx)
}
