package s3store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

// GetRange implements storage.RangeReader: a GetObject of bytes
// off..off+n-1 (If-Match the revision, an ETag, when given). The Info is
// the whole object's: its size from Content-Range. When a ranged response
// carries no whole-object checksum for a multipart object (S3 need not
// return one for a range), the range at byte 0 (of a read pinned to a
// revision or not) asks HeadObject for it, so Info.ProviderChecksum is
// what Get would report.
func (s *Store) GetRange(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	if off < 0 || n < 1 {
		return nil, nil, wrap("get", space+"/"+id, fmt.Errorf("range of %d bytes at %d", n, off))
	}
	in := &s3.GetObjectInput{
		Bucket:       aws.String(key.bucket),
		Key:          aws.String(key.key),
		Range:        aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
		ChecksumMode: types.ChecksumModeEnabled,
	}
	if revision != "" {
		in.IfMatch = aws.String(revision)
	}
	out, err := s.client.GetObject(ctx, in, getOptions(ctx)...)
	if err != nil {
		if errorCode(err) == "InvalidRange" {
			// A range at or past the end: S3 refuses it (an empty
			// object has no byte 0). Read the object whole instead.
			return s.rangeFromHead(ctx, key, id, off, revision)
		}
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	a := attrs{etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata, encoding: out.ContentEncoding,
		class: string(out.StorageClass), restore: out.Restore, dura: s.dura()}
	if total, ok := rangeTotal(aws.ToString(out.ContentRange)); ok {
		a.size = aws.Int64(total)
	}
	info, err := a.info(id)
	if err == nil && off == 0 && info.ProviderChecksum == "" && aws.ToInt64(a.size) > aws.ToInt64(out.ContentLength) {
		var h *storage.Info
		if h, err = s.head(ctx, key, id); err == nil {
			if h.Revision != info.Revision {
				err = fmt.Errorf("%w: ETag %s, then %s", storage.ErrChanged, info.Revision, h.Revision)
			}
			info.ProviderChecksum = h.ProviderChecksum
		}
	}
	if err != nil {
		out.Body.Close()
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	return out.Body, info, nil
}

// rangeFromHead answers a range S3 refused as past the end: an empty
// stream with the object's Info.
func (s *Store) rangeFromHead(ctx context.Context, key object, id string, off int64, revision string) (io.ReadCloser, *storage.Info, error) {
	info, err := s.head(ctx, key, id)
	switch {
	case err != nil:
		return nil, nil, wrap("get", key.key, err)
	case revision != "" && info.Revision != revision:
		return nil, nil, wrap("get", key.key, fmt.Errorf("%w: ETag %s, expected %s", storage.ErrChanged, info.Revision, revision))
	case off < info.Size:
		return nil, nil, wrap("get", key.key, fmt.Errorf("S3 refused the range at %d of %d bytes", off, info.Size))
	}
	return io.NopCloser(bytes.NewReader(nil)), info, nil
}

// rangeTotal reads the size from a Content-Range ("bytes 0-99/1234").
func rangeTotal(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || total == "*" {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}
