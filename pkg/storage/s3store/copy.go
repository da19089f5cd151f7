package s3store

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// object names one object (a version of it when version is set). As a
// copy's source, ifMatch is a precondition on its ETag; as a write's
// target, ifAbsent makes the write fail when an object exists (both
// ErrChanged).
type object struct {
	bucket, key, version string
	ifMatch              string
	ifAbsent             bool
}

// condition is the If-None-Match of a write to o.
func (o object) condition() *string {
	if o.ifAbsent {
		return aws.String("*")
	}
	return nil
}

// sourceCondition is the x-amz-copy-source-if-match of a copy from o.
func (o object) sourceCondition() *string {
	if o.ifMatch == "" {
		return nil
	}
	return aws.String(o.ifMatch)
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
// version ID S3 gave the copy ("" in an unversioned bucket) and its ETag.
func (s *Store) copyObject(ctx context.Context, from, dst object, size int64, meta map[string]string, mime string) (copied, error) {
	return s.copyObjectClass(ctx, from, dst, size, meta, mime, "")
}

// copied is what S3 answered a copy: the new version's ID and ETag.
type copied struct{ version, etag string }

// copyObjectClass is copyObject writing the copy in storage class class
// ("" the bucket's default).
func (s *Store) copyObjectClass(ctx context.Context, from, dst object, size int64, meta map[string]string, mime, class string) (copied, error) {
	src := from.copySource()
	meta, enc := splitEncoding(meta)
	if err := s.duraFits(size); err != nil {
		return copied{}, err
	}
	if size <= s.cfg.CopyThreshold || s.dura() {
		out, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:            aws.String(dst.bucket),
			Key:               aws.String(dst.key),
			CopySource:        aws.String(src),
			CopySourceIfMatch: from.sourceCondition(),
			IfNoneMatch:       dst.condition(),
			MetadataDirective: types.MetadataDirectiveReplace,
			Metadata:          meta,
			ContentEncoding:   enc,
			ContentType:       aws.String(mime),
			StorageClass:      types.StorageClass(class),
		})
		if err != nil {
			return copied{}, err
		}
		c := copied{version: aws.ToString(out.VersionId)}
		if out.CopyObjectResult != nil {
			c.etag = aws.ToString(out.CopyObjectResult.ETag)
		}
		return c, nil
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
		return copied{}, err
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
				Bucket:            aws.String(dst.bucket),
				Key:               aws.String(dst.key),
				UploadId:          created.UploadId,
				PartNumber:        aws.Int32(int32(i + 1)),
				CopySource:        aws.String(src),
				CopySourceIfMatch: from.sourceCondition(),
				CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
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
		return copied{}, err
	}
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(dst.bucket),
		Key:             aws.String(dst.key),
		UploadId:        created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		ChecksumType:    types.ChecksumTypeFullObject,
		IfNoneMatch:     dst.condition(),
	})
	if err != nil {
		return copied{}, err
	}
	completed = true
	return copied{version: aws.ToString(done.VersionId), etag: aws.ToString(done.ETag)}, nil
}

// ServerSideCopy implements storage.ServerSideCopier: when src is an
// s3store.Store on the same *s3.Client, the item is copied inside S3 with
// its MD5, properties and mimetype. A source whose recorded MD5 its
// single-part ETag contradicts (storage.ChecksumOf: replaced or gone sour)
// is refused with storage.ErrChecksumMismatch rather than duplicated.
func (s *Store) ServerSideCopy(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, bool, error) {
	return s.ServerSideCopySeen(ctx, src, srcSpace, srcID, dstSpace, dstID, storage.Seen{})
}

var _ storage.SeenCopier = (*Store)(nil)

// ServerSideCopySeen implements storage.SeenCopier: ServerSideCopy that
// reads neither item again when the caller has (see serverSideCopy).
func (s *Store) ServerSideCopySeen(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string, seen storage.Seen) (*storage.Info, bool, error) {
	from, ok := src.(*Store)
	if !ok || from.client != s.client {
		return nil, false, nil
	}
	info, err := s.serverSideCopy(ctx, from, srcSpace, srcID, dstSpace, dstID, seen)
	return info, true, wrap("copy", srcSpace+"/"+srcID+" to "+dstSpace+"/"+dstID, err)
}

// serverSideCopy copies with one request per need: the destination
// space's marker (a write needs its space); the source's HEAD unless
// seen.Source gives it, the copy then conditional on that ETag; the
// destination's HEAD before an overwrite in an unversioned bucket
// (preserve) unless seen gives it — a destination read as absent is
// written only if still absent; the copy. A single-part copy's result
// ETag is the MD5 of what S3 stored, checked against the source's: no
// read after it (a multipart copy's is not an MD5: it is read back).
func (s *Store) serverSideCopy(ctx context.Context, from *Store, srcSpace, srcID, dstSpace, dstID string, seen storage.Seen) (*storage.Info, error) {
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
	srcInfo := seen.Source
	if srcInfo != nil && srcInfo.Revision != "" {
		srcKey.ifMatch = srcInfo.Revision
	} else if srcInfo, err = from.head(ctx, srcKey, srcID); err != nil {
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
	undo := func() {}
	switch {
	case seen.DestRead && seen.Dest == nil:
		dstKey.ifAbsent = true
	default:
		if undo, err = s.preserve(ctx, dstKey, dstSpace, dstID, seen.Dest, storage.ReplacedByOverwrite); err != nil {
			return nil, err
		}
	}
	out, err := s.copyObject(ctx, srcKey, dstKey, srcInfo.Size, meta, srcInfo.MimeType)
	if err != nil {
		undo()
		return nil, err
	}
	pc := providerChecksum(out.etag, "", "")
	if alg, v, _ := storage.SplitProviderChecksum(pc); alg == storage.AlgMD5 && v != srcInfo.Checksum {
		// S3 stored other bytes than the source's recorded MD5 says. Under
		// a precondition on the source (ignored by this endpoint) the
		// source changed since it was read.
		if srcKey.ifMatch != "" {
			return nil, fmt.Errorf("%w: the copy has MD5 %s, the source read before it %s", storage.ErrChanged, v, srcInfo.Checksum)
		}
		return nil, fmt.Errorf("%w: the copy has MD5 %s, the source %s", storage.ErrChecksumMismatch, v, srcInfo.Checksum)
	}
	if pc == storage.ProviderMD5(srcInfo.Checksum) {
		props := make(map[string]string, len(srcInfo.Properties))
		maps.Copy(props, srcInfo.Properties)
		return &storage.Info{ContentID: dstID, Checksum: srcInfo.Checksum, ProviderChecksum: pc, Size: srcInfo.Size,
			MimeType: srcInfo.MimeType, Modified: time.Now().UTC().Truncate(time.Second), Properties: props,
			Revision: out.etag}, nil
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
