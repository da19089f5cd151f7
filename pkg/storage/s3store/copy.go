package s3store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// object names one object (a version of it when version is set).
type object struct {
	bucket, key, version string
}

// copySource formats the object for x-amz-copy-source, percent-encoding
// everything in the key but unreserved characters and '/'.
func (o object) copySource() string {
	bucket, key := o.bucket, o.key
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.WriteString(bucket)
	b.WriteByte('/')
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	if o.version != "" {
		b.WriteString("?versionId=" + url.QueryEscape(o.version))
	}
	return b.String()
}

// copyObject copies the object from (size bytes) to dstKey of this store's
// bucket server-side, replacing the metadata and content type:
// CopyObject up to CopyThreshold, UploadPartCopy above (Streams parts at
// once: the bytes never pass through this process, so no buffers). It returns the
// version ID S3 gave the copy ("" in an unversioned bucket).
func (s *Store) copyObject(ctx context.Context, from, dst object, size int64, meta map[string]string, mime string) (string, error) {
	return s.copyObjectClass(ctx, from, dst, size, meta, mime, "")
}

// copyObjectClass is copyObject writing the copy in storage class class
// ("" the bucket's default).
func (s *Store) copyObjectClass(ctx context.Context, from, dst object, size int64, meta map[string]string, mime, class string) (string, error) {
	src := from.copySource()
	meta, enc := splitEncoding(meta)
	if err := s.duraFits(size); err != nil {
		return "", err
	}
	if size <= s.cfg.CopyThreshold || s.dura() {
		out, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:            aws.String(dst.bucket),
			Key:               aws.String(dst.key),
			CopySource:        aws.String(src),
			MetadataDirective: types.MetadataDirectiveReplace,
			Metadata:          meta,
			ContentEncoding:   enc,
			ContentType:       aws.String(mime),
			StorageClass:      types.StorageClass(class),
		})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.VersionId), nil
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(dst.bucket),
		Key:               aws.String(dst.key),
		ContentType:       aws.String(mime),
		Metadata:          meta,
		ContentEncoding:   enc,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
		ChecksumType:      types.ChecksumTypeFullObject,
		StorageClass:      types.StorageClass(class),
	})
	if err != nil {
		return "", err
	}
	completed := false
	defer func() {
		if !completed {
			actx, cancel := objstore.Detached(ctx)
			defer cancel()
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(dst.bucket), Key: aws.String(dst.key), UploadId: created.UploadId,
			})
		}
	}()
	partSize := max(s.cfg.CopyPartSize, (size+MaxParts-1)/MaxParts)
	parts := make([]types.CompletedPart, (size+partSize-1)/partSize)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Streams)
	for i := range parts {
		off := int64(i) * partSize
		end := min(off+partSize, size) - 1
		g.Go(func() error {
			out, err := s.client.UploadPartCopy(gctx, &s3.UploadPartCopyInput{
				Bucket:          aws.String(dst.bucket),
				Key:             aws.String(dst.key),
				UploadId:        created.UploadId,
				PartNumber:      aws.Int32(int32(i + 1)),
				CopySource:      aws.String(src),
				CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
			})
			if err != nil {
				return err
			}
			part := types.CompletedPart{PartNumber: aws.Int32(int32(i + 1))}
			if r := out.CopyPartResult; r != nil {
				part.ETag = r.ETag
				part.ChecksumCRC64NVME = r.ChecksumCRC64NVME
			}
			parts[i] = part
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(dst.bucket),
		Key:             aws.String(dst.key),
		UploadId:        created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		ChecksumType:    types.ChecksumTypeFullObject,
	})
	if err != nil {
		return "", err
	}
	completed = true
	return aws.ToString(done.VersionId), nil
}

// ServerSideCopy implements storage.ServerSideCopier: when src is an
// s3store.Store on the same *s3.Client, the item is copied inside S3 with
// its MD5, properties and mimetype. A source whose recorded MD5 its
// single-part ETag contradicts (storage.ChecksumOf: replaced or gone sour)
// is refused with storage.ErrChecksumMismatch rather than duplicated.
func (s *Store) ServerSideCopy(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, bool, error) {
	from, ok := src.(*Store)
	if !ok || from.client != s.client {
		return nil, false, nil
	}
	info, err := s.serverSideCopy(ctx, from, srcSpace, srcID, dstSpace, dstID)
	return info, true, wrap("copy", srcSpace+"/"+srcID+" to "+dstSpace+"/"+dstID, err)
}

func (s *Store) serverSideCopy(ctx context.Context, from *Store, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, error) {
	srcKey, err := from.contentKey(srcSpace, srcID)
	if err != nil {
		return nil, err
	}
	dstKey, err := s.contentKey(dstSpace, dstID)
	if err != nil {
		return nil, err
	}
	if err := s.needSpace(ctx, dstSpace); err != nil {
		return nil, err
	}
	srcInfo, err := from.head(ctx, srcKey, srcID)
	if err != nil {
		return nil, err
	}
	if c := storage.ChecksumOf(srcInfo, nil); c.ClaimContradicted {
		// Replaced or gone sour behind Mill's back: never copied from.
		return nil, fmt.Errorf("%w: source %s", storage.ErrChecksumMismatch, c)
	}
	meta, err := s.encodeMeta(srcInfo.Checksum, srcInfo.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, dstKey, dstSpace, dstID, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	if _, err := s.copyObject(ctx, srcKey, dstKey, srcInfo.Size, meta, srcInfo.MimeType); err != nil {
		undo()
		return nil, err
	}
	info, err := s.head(ctx, dstKey, dstID)
	if err != nil {
		return nil, err
	}
	if info.Size != srcInfo.Size || info.Checksum != srcInfo.Checksum {
		return nil, fmt.Errorf("%w: copy has %d bytes MD5 %s, source %d bytes MD5 %s", storage.ErrChecksumMismatch, info.Size, info.Checksum, srcInfo.Size, srcInfo.Checksum)
	}
	return info, nil
}
