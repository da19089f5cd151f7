package gcsstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// putSmall checks buffered content and sends it in one request with its
// MD5, which GCS verifies: a conditional write, retried (overwrite).
func (s *Store) putSmall(ctx context.Context, key, space, id string, data []byte, want string, opts storage.PutOptions) (*storage.Info, error) {
	if err := objstore.SizeErr(int64(len(data)), opts.Size); err != nil {
		return nil, err
	}
	sums := storage.NewSums()
	sums.Write(data)
	if err := objstore.CheckMD5(sums.MD5(), want); err != nil {
		return nil, err
	}
	u, err := s.upload(key, sums, opts, 0)
	if err != nil {
		return nil, err
	}
	a, err := s.overwrite(ctx, key, space, id, func(gen int64) (*attrs, error) {
		return s.bucket.insertIf(ctx, u, data, gen, func(a *attrs) bool {
			return a.Size == int64(len(data)) && bytes.Equal(a.MD5, u.md5) && a.ContentType == u.contentType && maps.Equal(a.Metadata, u.metadata)
		})
	})
	if err != nil {
		return nil, err
	}
	return infoOf(a, id), nil
}

// overwrite replaces the item at key (item id of space) by what write
// writes on condition that the live generation is gen, the one it kept
// recoverable (0: there was none). When another writer replaced that
// generation first (a 412), that writer's is kept recoverable and written
// over in turn, up to 20 times: the last writer wins, and every
// generation replaced has a trash copy. write retries its conditional
// request (insertIf, rewrite with copyTo.ifGen). A writer that lost every
// race but the last writes unconditionally (gen is unconditional), sent
// once: it still wins, as every write did before writes were conditional,
// and only a generation written in that last moment has no trash copy.
func (s *Store) overwrite(ctx context.Context, key, space, id string, write func(gen int64) (*attrs, error)) (*attrs, error) {
	for try := 0; ; try++ {
		gen, undo, err := s.preserveGen(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
		if err != nil {
			return nil, err
		}
		last := try == overwriteTries-1
		if last {
			gen = unconditional
		}
		a, err := write(gen)
		if err == nil {
			return a, nil
		}
		// A 412 keeps the trash copy: the generation it holds was
		// replaced, by the other writer.
		if !conditionFailed(err) || last {
			undo()
			return nil, err
		}
	}
}

// overwriteTries bounds overwrite's writes; unconditional is the gen of
// its last.
const (
	overwriteTries       = 20
	unconditional  int64 = -1
)

// condition is the ifGenerationMatch of a write replacing gen: none for
// an unconditional one.
func condition(gen int64) *int64 {
	if gen == unconditional {
		return nil
	}
	return &gen
}

// putLarge streams content as a resumable upload of PartSize chunks. With
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
		a, err := s.write(ctx, key, r, sums, opts, s.cfg.PartSize, func() error {
			if err := objstore.SizeErr(sums.Len(), opts.Size); err != nil {
				return err
			}
			return objstore.CheckMD5(sums.MD5(), want)
		})
		if err != nil {
			undo()
			return nil, err
		}
		return infoOf(a, id), nil
	}
	tmp := s.layout.TmpKey(objstore.RandHex())
	var tmpGen int64
	defer func() { s.deleteKey(ctx, tmp, tmpGen) }()
	t, err := s.write(ctx, tmp, r, sums, storage.PutOptions{Size: opts.Size, MimeType: opts.MimeType, Properties: opts.Properties}, s.cfg.PartSize, func() error {
		return objstore.SizeErr(sums.Len(), opts.Size)
	})
	if err != nil {
		return nil, err
	}
	tmpGen = t.Generation
	meta, err := metaNames.Build(sums.MD5(), storage.CRC64NVMEBase64(sums.CRC64NVME()), opts.Properties)
	if err != nil {
		return nil, err
	}
	mime := objstore.MimeOr(opts.MimeType)
	a, err := s.overwrite(ctx, key, space, id, func(gen int64) (*attrs, error) {
		return s.bucket.rewrite(ctx, tmp, tmpGen, copyTo{key: key, meta: meta, mime: mime, ifGen: condition(gen), mine: func(a *attrs) bool {
			return a.Size == t.Size && bytes.Equal(a.MD5, t.MD5) && a.ContentType == mime && maps.Equal(a.Metadata, meta)
		}})
	})
	if err != nil {
		return nil, err
	}
	if hex.EncodeToString(a.MD5) != sums.MD5() {
		return nil, fmt.Errorf("%w: GCS reports MD5 %x for the bytes Mill sent with MD5 %s", storage.ErrChecksumMismatch, a.MD5, sums.MD5())
	}
	return infoOf(a, id), nil
}

// write uploads r to key as a resumable upload in chunks of chunk bytes,
// hashing it into sums; check runs when r ends, before the last chunk
// leaves: an error abandons the upload, so nothing is committed.
func (s *Store) write(ctx context.Context, key string, r io.Reader, sums *storage.Sums, opts storage.PutOptions, chunk int64, check func() error) (*attrs, error) {
	u, err := s.upload(key, sums, opts, chunk)
	if err != nil {
		return nil, err
	}
	return s.bucket.insert(ctx, u, &checked{r: io.TeeReader(r, sums), check: check})
}

// upload describes the write of an item's bytes to key: in one request
// (chunk 0), whose MD5 and CRC sums already hold, or in chunks.
func (s *Store) upload(key string, sums *storage.Sums, opts storage.PutOptions, chunk int64) (upload, error) {
	u := upload{key: key, contentType: objstore.MimeOr(opts.MimeType), chunk: chunk}
	md5 := ""
	if chunk == 0 {
		md5 = sums.MD5()
	} else if want, _ := storage.NormalizeMD5(opts.Checksum); want != "" {
		md5 = want
	}
	if md5 != "" {
		u.md5, _ = hex.DecodeString(md5)
	}
	crc := ""
	if chunk == 0 {
		crc = storage.CRC64NVMEBase64(sums.CRC64NVME())
	}
	meta, err := metaNames.Build(md5, crc, opts.Properties)
	u.metadata = meta
	return u, err
}

// checked is a stream that runs check at its end: a failed check is the
// stream's error instead of io.EOF, which abandons a resumable upload
// before its last chunk is sent.
type checked struct {
	r     io.Reader
	check func() error
}

func (c *checked) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF && c.check != nil {
		if cerr := c.check(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// copyObject copies src over dst server side (a rewrite, unconditional
// and sent once) with metadata meta and content type mime, and returns
// the new object's attributes.
func (s *Store) copyObject(ctx context.Context, src, dst string, meta map[string]string, mime string) (*attrs, error) {
	return s.bucket.rewrite(ctx, src, 0, copyTo{key: dst, meta: meta, mime: mime})
}
