package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc64"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
)

// Put uploads r to the item: one request up to MultipartThreshold, a
// multipart upload above it (see the package doc).
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
	if _, err := metadata(want, opts.Properties); err != nil {
		return nil, err
	}
	if err := s.needSpace(ctx, space); err != nil {
		return nil, err
	}
	r = ctxio.NewReader(ctx, r)
	p := &putter{s: s, key: key, id: id, want: want, opts: opts, mime: mimeOr(opts.MimeType),
		keep: func(ctx context.Context) (func(), error) {
			return s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
		}}
	info, err := p.run(ctx, r)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return info, err
}

type putter struct {
	s    *Store
	key  string
	id   string
	want string
	opts storage.PutOptions
	mime string
	// keep is called just before the put commits over the item's key: it
	// keeps what is there recoverable, and returns how to drop that copy
	// when the commit fails.
	keep func(ctx context.Context) (undo func(), err error)
}

func (p *putter) run(ctx context.Context, r io.Reader) (*storage.Info, error) {
	size, threshold := p.opts.Size, p.s.cfg.MultipartThreshold
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
		buf := make([]byte, p.s.cfg.PartSize)
		n, err := io.ReadFull(r, buf)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return p.single(ctx, buf[:n])
		}
		if err != nil {
			return nil, err
		}
		return p.multipart(ctx, r, buf)
	default:
		partSize := max(p.s.cfg.PartSize, (size+MaxParts-1)/MaxParts)
		if partSize > MaxPartSize {
			return nil, fmt.Errorf("%d bytes is more than S3 stores in one object", size)
		}
		return p.multipart(ctx, io.LimitReader(r, size+1), make([]byte, partSize)[:0])
	}
}

// single uploads buffered content with Content-MD5.
func (p *putter) single(ctx context.Context, data []byte) (*storage.Info, error) {
	sum := md5.Sum(data)
	got := hex.EncodeToString(sum[:])
	if p.want != "" && got != p.want {
		return nil, fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, got, p.want)
	}
	meta, err := metadata(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := p.keep(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(p.s.cfg.Bucket),
		Key:           aws.String(p.key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String(p.mime),
		Metadata:      meta,
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

// multipart uploads r in parts of len(buf[:cap]) bytes, the first part
// already in buf when len(buf) > 0. The upload goes to the item's key when
// the MD5 is known up front, else to a temporary key committed by a
// server-side copy. Every failure aborts the upload.
func (p *putter) multipart(ctx context.Context, r io.Reader, buf []byte) (_ *storage.Info, err error) {
	s := p.s
	target := p.key
	if p.want == "" {
		target = s.cfg.Prefix + tmpPrefix + randHex()
	}
	meta, err := metadata(p.want, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.cfg.Bucket),
		Key:               aws.String(target),
		ContentType:       aws.String(p.mime),
		Metadata:          meta,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
		ChecksumType:      types.ChecksumTypeFullObject,
	})
	if err != nil {
		return nil, err
	}
	uploadID := created.UploadId
	completed := false
	defer func() {
		if completed {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.cfg.Bucket), Key: aws.String(target), UploadId: uploadID,
		})
	}()

	h := md5.New()
	var crc uint64
	var total int64
	var parts []types.CompletedPart
	prefilled := len(buf) > 0
	buf = buf[:cap(buf)]
	for num := int32(1); ; num++ {
		var n int
		var rerr error
		if prefilled {
			n, prefilled = len(buf), false
		} else {
			n, rerr = io.ReadFull(r, buf)
		}
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return nil, rerr
		}
		if n > 0 {
			if num > MaxParts {
				return nil, fmt.Errorf("content needs more than %d parts of %d bytes", MaxParts, len(buf))
			}
			part := buf[:n]
			h.Write(part)
			crc = crc64.Update(crc, storage.CRC64NVMETable, part)
			partCRC := storage.CRC64NVMEBase64(crc64.Checksum(part, storage.CRC64NVMETable))
			out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket:            aws.String(s.cfg.Bucket),
				Key:               aws.String(target),
				UploadId:          uploadID,
				PartNumber:        aws.Int32(num),
				Body:              bytes.NewReader(part),
				ContentLength:     aws.Int64(int64(n)),
				ChecksumCRC64NVME: aws.String(partCRC),
			}, unsignedPayload)
			if err != nil {
				return nil, err
			}
			parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num), ChecksumCRC64NVME: aws.String(partCRC)})
			total += int64(n)
		}
		if rerr != nil {
			break
		}
	}
	if p.opts.Size >= 0 && total != p.opts.Size {
		return nil, fmt.Errorf("read %d bytes or more, PutOptions.Size says %d", total, p.opts.Size)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if p.want != "" && got != p.want {
		return nil, fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, got, p.want)
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
	fullCRC := storage.CRC64NVMEBase64(crc)
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:            aws.String(s.cfg.Bucket),
		Key:               aws.String(target),
		UploadId:          uploadID,
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC64NVME: aws.String(fullCRC),
		ChecksumType:      types.ChecksumTypeFullObject,
	})
	if err != nil {
		undo()
		return nil, err
	}
	completed = true
	if c := aws.ToString(done.ChecksumCRC64NVME); c != "" && c != fullCRC {
		// Remove exactly the version just written: in a versioned bucket
		// the previous one becomes current again.
		s.deleteKey(ctx, target, aws.ToString(done.VersionId))
		return nil, fmt.Errorf("%w: S3 reports CRC64NVME %s, the stream had %s", storage.ErrChecksumMismatch, c, fullCRC)
	}
	if target == p.key {
		return p.info(got, total, "", fullCRC)
	}
	// Commit the temporary object under the item's key with its MD5, then
	// remove the temporary object for good (its version, in a versioned
	// bucket, rather than leave a noncurrent copy behind).
	defer s.deleteKey(ctx, target, aws.ToString(done.VersionId))
	fullMeta, err := metadata(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err = p.keep(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.copyObject(ctx, object{bucket: s.cfg.Bucket, key: target}, p.key, total, fullMeta, p.mime); err != nil {
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
