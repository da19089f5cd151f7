package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// Put uploads r to the item: one request up to Config.Threshold, a
// multipart upload above it with Streams parts in flight, resumable when
// opts.Resume asks (see the package doc).
func (s *Store) Put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	info, err := s.put(ctx, space, id, r, opts)
	return info, wrap("put", space+"/"+id, err)
}

func (s *Store) put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, err
	}
	want, err := storage.NormalizeMD5(opts.Checksum)
	if err != nil {
		return nil, err
	}
	if err := s.duraFits(opts.Size); err != nil {
		return nil, err
	}
	if _, err := s.encodeMeta(want, opts.Properties); err != nil {
		return nil, err
	}
	if err := s.needSpace(ctx, space); err != nil {
		return nil, err
	}
	keep := func(ctx context.Context) (func(), error) {
		return s.preserve(ctx, key, space, id, opts.Replaces, storage.ReplacedByOverwrite)
	}
	if opts.ReplacesRead && opts.Replaces == nil {
		// Read as absent: nothing to keep, and written only if still so.
		key.ifAbsent = true
		keep = func(context.Context) (func(), error) { return func() {}, nil }
	}
	p := &putter{s: s, key: key, id: id, want: want, opts: opts, mime: objstore.MimeOr(opts.MimeType), keep: keep}
	p.streams, p.partSize = s.cfg.Streams, s.cfg.PartSize
	if opts.Transfer.Streams > 0 {
		p.streams = opts.Transfer.Streams
	}
	if opts.Transfer.PartSize >= MinPartSize && opts.Transfer.PartSize <= MaxPartSize {
		p.partSize = opts.Transfer.PartSize
	}
	if ra, ok := r.(io.ReaderAt); ok && opts.Size > s.cfg.Threshold {
		// Parts are fetched in parallel; the reader honours its own
		// context (storage.Open's, an *os.File's reads are short).
		p.ra = ra
	} else {
		r = ctxio.NewReader(ctx, r)
	}
	info, err := p.run(ctx, r)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return info, err
}

type putter struct {
	s    *Store
	key  object
	id   string
	want string
	opts storage.PutOptions
	mime string
	// keep is called just before the put commits over the item's key: it
	// keeps what is there recoverable, and returns how to drop that copy
	// when the commit fails.
	keep func(ctx context.Context) (undo func(), err error)
	// ra is the content as an io.ReaderAt when it is one (parallel
	// reads, resumable); streams parts of partSize in flight.
	ra       io.ReaderAt
	streams  int
	partSize int64
}

func (p *putter) run(ctx context.Context, r io.Reader) (*storage.Info, error) {
	size, threshold := p.opts.Size, p.s.cfg.Threshold
	switch {
	case size >= 0 && size <= threshold:
		buf := make([]byte, size+1) // one byte more reveals a longer stream
		n, err := io.ReadFull(r, buf)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		if int64(n) != size {
			return nil, fmt.Errorf("read %d bytes or more, PutOptions.Size says %d", n, size)
		}
		return p.single(ctx, buf[:n])
	case size < 0:
		buf := make([]byte, p.partSize)
		n, err := io.ReadFull(r, buf)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return p.single(ctx, buf[:n])
		}
		if err != nil {
			return nil, err
		}
		// The first part is read: the rest follows it.
		return p.multipart(ctx, io.MultiReader(bytes.NewReader(buf), r))
	default:
		p.partSize = max(p.partSize, (size+MaxParts-1)/MaxParts)
		if p.partSize > MaxPartSize {
			return nil, fmt.Errorf("%d bytes is more than S3 stores in one object", size)
		}
		return p.multipart(ctx, r)
	}
}

// single uploads buffered content with Content-MD5.
func (p *putter) single(ctx context.Context, data []byte) (*storage.Info, error) {
	sum := md5.Sum(data)
	got := hex.EncodeToString(sum[:])
	if err := objstore.CheckMD5(got, p.want); err != nil {
		return nil, err
	}
	meta, err := p.s.encodeMeta(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	meta, enc := splitEncoding(meta)
	undo, err := p.keep(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:          aws.String(p.key.bucket),
		Key:             aws.String(p.key.key),
		Body:            bytes.NewReader(data),
		ContentLength:   aws.Int64(int64(len(data))),
		ContentMD5:      aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		IfNoneMatch:     p.key.condition(),
		ContentType:     aws.String(p.mime),
		Metadata:        meta,
		ContentEncoding: enc,
		StorageClass:    types.StorageClass(p.opts.StorageClass),
	}, unsignedPayload)
	if err != nil {
		undo()
		return nil, err
	}
	return p.info(got, int64(len(data)), aws.ToString(out.ETag), "")
}

func (p *putter) info(md5hex string, size int64, etag, crc string) (*storage.Info, error) {
	props := map[string]string{}
	for k, v := range p.opts.Properties {
		props[k] = v
	}
	pc := providerChecksum(etag, crc, types.ChecksumTypeFullObject)
	if alg, v, _ := storage.SplitProviderChecksum(pc); alg == storage.AlgMD5 && v != md5hex {
		return nil, fmt.Errorf("%w: S3 ETag %s differs from the content MD5 %s", storage.ErrChecksumMismatch, etag, md5hex)
	}
	return &storage.Info{
		ContentID:        p.id,
		Checksum:         md5hex,
		ProviderChecksum: pc,
		Size:             size,
		MimeType:         p.mime,
		Modified:         time.Now().UTC().Truncate(time.Second),
		Properties:       props,
	}, nil
}

// multipart uploads the content in parts of p.partSize, p.streams at once:
// read in parallel from p.ra when it is set (resumable when p.opts.Resume
// asks), else one part at a time from r; hashed in order (MD5 and
// CRC64NVME, once per byte) while earlier parts upload. The upload goes to
// the item's key when the MD5 is known up front, else to a temporary key
// committed by a server-side copy. A failure aborts the upload, unless a
// checkpoint keeps it for a resume.
func (p *putter) multipart(ctx context.Context, r io.Reader) (_ *storage.Info, err error) {
	s := p.s
	target, targetClass := p.key, p.opts.StorageClass
	if p.want == "" || s.dura() {
		// The temporary object stays in the default class: an archived
		// one could not be copied. (In DuraCloud's layout the copy makes
		// the item a single-part object, whose ETag is its MD5.)
		target, targetClass = object{bucket: s.cfg.Bucket, key: s.layout.TmpKey(objstore.RandHex())}, ""
	}
	meta, err := s.encodeMeta(p.want, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	u := &upload{bucket: target.bucket, target: target.key, partSize: p.partSize, size: p.opts.Size, parts: map[int32]cpPart{}, sums: storage.NewSums()}
	var cp *checkpointer
	if rs := p.opts.Resume; rs != nil && p.ra != nil && target == p.key && p.opts.Size >= rs.MinSize {
		cp = &checkpointer{s: s, rs: rs, u: u, meta: metaDigest(meta, p.mime), want: p.want}
		if err := cp.resume(ctx); err != nil {
			return nil, err
		}
	}
	if u.id == "" {
		meta, enc := splitEncoding(meta)
		created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket:            aws.String(target.bucket),
			Key:               aws.String(target.key),
			ContentType:       aws.String(p.mime),
			Metadata:          meta,
			ContentEncoding:   enc,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
			ChecksumType:      types.ChecksumTypeFullObject,
			StorageClass:      types.StorageClass(targetClass),
		})
		if err != nil {
			return nil, err
		}
		u.id = aws.ToString(created.UploadId)
	}
	completed := false
	defer func() {
		switch {
		case completed:
		case cp != nil && keepForResume(err):
			// A retry, a continuation or another worker resumes it.
			cp.flush(ctx)
		default:
			s.abort(ctx, target, u.id)
			if cp != nil {
				cp.drop(ctx)
			}
		}
	}()
	if cp != nil {
		cp.start(ctx)
		defer cp.stop()
	}

	var stop <-chan struct{}
	if cp != nil {
		stop = cp.rs.Stop
	}
	parts := storage.Parts{Start: min(u.hashed, u.firstMissing()), End: u.size, Size: u.partSize, Streams: p.streams, Stop: stop}
	if p.ra != nil {
		parts.Fill = func(_ context.Context, i int, off int64, buf []byte) (int, error) {
			if _, ok := u.done(u.num(off)); ok && off+int64(len(buf)) <= u.hashedAt() {
				return len(buf), nil // uploaded and hashed: not needed
			}
			n, err := p.ra.ReadAt(buf, off)
			if err == io.EOF && n == len(buf) {
				err = nil
			}
			if err == nil && n < len(buf) {
				err = fmt.Errorf("content ended at %d bytes, PutOptions.Size says %d", off+int64(n), u.size)
			}
			return n, err
		}
	} else {
		parts.SerialFill = true
		lr := r
		if u.size >= 0 {
			lr = io.LimitReader(r, u.size)
		}
		parts.Fill = func(_ context.Context, _ int, _ int64, buf []byte) (int, error) {
			n, err := io.ReadFull(lr, buf)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = nil
			}
			return n, err
		}
	}
	parts.InOrder = func(i int, off int64, b []byte) error {
		if u.num(off) > MaxParts {
			return fmt.Errorf("content needs more than %d parts of %d bytes", MaxParts, u.partSize)
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if off < u.hashed {
			return nil // in the resumed state already
		}
		u.sums.Write(b)
		u.hashed = off + int64(len(b))
		if cp != nil {
			st, err := u.sums.MarshalBinary()
			if err != nil {
				return err
			}
			u.state = st
			cp.changed()
		}
		return nil
	}
	parts.After = func(ctx context.Context, _ int, off int64, b []byte) error {
		num := u.num(off)
		if _, ok := u.done(num); ok {
			return nil
		}
		crc := storage.CRC64NVMEBase64(storage.UpdateCRC64NVME(0, b))
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket:            aws.String(target.bucket),
			Key:               aws.String(target.key),
			UploadId:          aws.String(u.id),
			PartNumber:        aws.Int32(num),
			Body:              bytes.NewReader(b),
			ContentLength:     aws.Int64(int64(len(b))),
			ChecksumCRC64NVME: aws.String(crc),
		}, unsignedPayload)
		if err != nil {
			return err
		}
		u.mu.Lock()
		u.parts[num] = cpPart{Num: num, ETag: aws.ToString(out.ETag), CRC: crc, Size: int64(len(b))}
		u.mu.Unlock()
		if cp != nil {
			cp.changed()
		}
		return nil
	}
	if err := parts.Run(ctx); err != nil {
		return nil, err
	}
	total := u.hashedAt()
	if u.size >= 0 {
		if total != u.size {
			return nil, fmt.Errorf("read %d bytes, PutOptions.Size says %d", total, u.size)
		}
		var one [1]byte
		if p.ra == nil {
			if n, _ := io.ReadFull(r, one[:]); n > 0 {
				return nil, fmt.Errorf("read more than %d bytes, PutOptions.Size says %d", u.size, u.size)
			}
		}
	}
	got := u.sums.MD5()
	if err := objstore.CheckMD5(got, p.want); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	undo := func() {}
	if target == p.key {
		if undo, err = p.keep(ctx); err != nil {
			return nil, err
		}
	}
	fullCRC := storage.CRC64NVMEBase64(u.sums.CRC64NVME())
	if err := u.partsMatch(u.sums.CRC64NVME()); err != nil {
		return nil, err
	}
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:            aws.String(target.bucket),
		Key:               aws.String(target.key),
		UploadId:          aws.String(u.id),
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: u.completed()},
		ChecksumCRC64NVME: aws.String(fullCRC),
		ChecksumType:      types.ChecksumTypeFullObject,
		IfNoneMatch:       target.condition(),
	})
	if err != nil {
		undo()
		return nil, err
	}
	completed = true
	if cp != nil {
		cp.stop()
		cp.drop(ctx)
	}
	if c := aws.ToString(done.ChecksumCRC64NVME); c != "" && c != fullCRC {
		// Remove exactly the version just written: in a versioned bucket
		// the previous one becomes current again.
		s.deleteKey(ctx, object{bucket: target.bucket, key: target.key, version: aws.ToString(done.VersionId)})
		return nil, fmt.Errorf("%w: S3 reports CRC64NVME %s, the stream had %s", storage.ErrChecksumMismatch, c, fullCRC)
	}
	if target == p.key {
		return p.info(got, total, "", fullCRC)
	}
	// Commit the temporary object under the item's key with its MD5, then
	// remove the temporary object for good (its version, in a versioned
	// bucket, rather than leave a noncurrent copy behind).
	defer s.deleteKey(ctx, object{bucket: target.bucket, key: target.key, version: aws.ToString(done.VersionId)})
	fullMeta, err := s.encodeMeta(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err = p.keep(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.copyObjectClass(ctx, target, p.key, total, fullMeta, p.mime, p.opts.StorageClass); err != nil {
		undo()
		return nil, err
	}
	info, err := s.head(ctx, p.key, p.id)
	if err != nil {
		return nil, err
	}
	if info.Checksum != got || info.Size != total {
		return nil, fmt.Errorf("%w: committed copy has MD5 %s and %d bytes, the stream had %s and %d", storage.ErrChecksumMismatch, info.Checksum, info.Size, got, total)
	}
	return info, nil
}

// abort aborts a multipart upload, best effort, even after ctx ended.
func (s *Store) abort(ctx context.Context, key object, uploadID string) {
	actx, cancel := objstore.Detached(ctx)
	defer cancel()
	_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(key.bucket), Key: aws.String(key.key), UploadId: aws.String(uploadID),
	})
}
