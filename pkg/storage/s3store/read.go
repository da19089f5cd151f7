package s3store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

// ListContent lists up to limit IDs after `after` with ListObjectsV2
// (StartAfter), in S3's byte-wise order.
func (s *Store) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	es, more, err := s.ListEntries(ctx, space, after, limit)
	if err != nil {
		return nil, false, err
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids, more, nil
}

// ListEntries implements storage.EntryLister: ListContent with each
// object's size and storage class, from the same ListObjectsV2 page.
func (s *Store) ListEntries(ctx context.Context, space, after string, limit int) ([]storage.Entry, bool, error) {
	if err := s.validSpace(space); err != nil {
		return nil, false, wrap("list", space, err)
	}
	if limit <= 0 {
		limit = storage.DefaultPageSize
	}
	bucket, prefix := s.cfg.Bucket, s.layout.SpacePrefix(space)
	if s.dura() {
		bucket, prefix = s.duraBucket(space), ""
	}
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(bucket),
		Prefix:  aws.String(prefix),
		MaxKeys: aws.Int32(int32(min(limit, 1000))),
		// The restore state of archived objects, at no extra request (S3
		// reports it; an emulator may not: Entry.Restore is then none).
		OptionalObjectAttributes: []types.OptionalObjectAttributes{types.OptionalObjectAttributesRestoreStatus},
	}
	if after != "" {
		in.StartAfter = aws.String(prefix + after)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, false, wrap("list", space, err)
	}
	es := make([]storage.Entry, 0, len(out.Contents))
	for _, o := range out.Contents {
		es = append(es, storage.Entry{
			ID:           strings.TrimPrefix(aws.ToString(o.Key), prefix),
			Size:         aws.ToInt64(o.Size),
			StorageClass: storageClass(string(o.StorageClass)),
			Restore:      listedRestore(o.RestoreStatus),
		})
	}
	if len(es) == 0 {
		// An empty page: say whether the space is there at all.
		if err := s.needSpace(ctx, space); err != nil {
			return nil, false, wrap("list", space, err)
		}
	}
	return es, aws.ToBool(out.IsTruncated) && len(es) > 0, nil
}

// storageClass is Info.StorageClass of an S3 storage class: "" for
// STANDARD, which HeadObject leaves out and ListObjectsV2 names.
func storageClass(c string) string {
	if c == string(types.StorageClassStandard) {
		return ""
	}
	return c
}

// archived reports whether an object's bytes need a restore before they
// can be read: the GLACIER and DEEP_ARCHIVE classes, and the archive
// access tiers of INTELLIGENT_TIERING (HeadObject's ArchiveStatus).
// GLACIER_IR is read like any other class.
func archived(class string, archive types.ArchiveStatus) bool {
	return class == string(types.StorageClassGlacier) || class == string(types.StorageClassDeepArchive) || archive != ""
}

// restoreState reads the x-amz-restore header: `ongoing-request="true"`
// while a restore runs, `ongoing-request="false", expiry-date="…"` while
// the restored copy is there.
func restoreState(h string) storage.RestoreState {
	switch {
	case strings.Contains(h, `ongoing-request="true"`):
		return storage.RestoreOngoing
	case strings.Contains(h, `ongoing-request="false"`):
		return storage.RestoreRestored
	}
	return storage.RestoreNone
}

// listedRestore is the restore state a listing reports (RestoreStatus):
// none when it reports nothing.
func listedRestore(r *types.RestoreStatus) storage.RestoreState {
	switch {
	case r == nil || r.IsRestoreInProgress == nil:
		return storage.RestoreNone
	case *r.IsRestoreInProgress:
		return storage.RestoreOngoing
	}
	return storage.RestoreRestored
}

// attrs are what HeadObject and GetObject both report.
type attrs struct {
	etag, crc64nvme string
	checksumType    types.ChecksumType
	size            *int64
	mime            *string
	modified        *time.Time
	metadata        map[string]string
	encoding        *string // Content-Encoding
	dura            bool    // DuraCloud's metadata (duracloud.go), not Mill's
	class           string
	archive         types.ArchiveStatus
	restore         *string
}

func metaGet(m map[string]string, key string) (string, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

func (a attrs) info(id string) (*storage.Info, error) {
	info := &storage.Info{
		ContentID:  id,
		Size:       aws.ToInt64(a.size),
		MimeType:   aws.ToString(a.mime),
		Modified:   aws.ToTime(a.modified).UTC(),
		Properties: map[string]string{},
	}
	info.ProviderChecksum = providerChecksum(a.etag, a.crc64nvme, a.checksumType)
	if a.dura {
		info.Checksum, info.Properties = duraDecode(info.ProviderChecksum, a.metadata)
		if e := aws.ToString(a.encoding); e != "" {
			info.Properties[duraContentEncoding] = e
		}
	} else {
		info.Checksum, _ = metaGet(a.metadata, MetaMD5)
		if v, ok := metaGet(a.metadata, MetaProps); ok && v != "" {
			if err := json.Unmarshal([]byte(v), &info.Properties); err != nil {
				return nil, fmt.Errorf("metadata %s: %w", MetaProps, err)
			}
		}
	}
	info.Revision = a.etag
	info.StorageClass = storageClass(a.class)
	info.Archived = archived(info.StorageClass, a.archive)
	info.Restore = restoreState(aws.ToString(a.restore))
	return info, nil
}

// providerChecksum picks the whole-object checksum S3 reports: the ETag of
// a single-part object (its MD5), else a full-object CRC64NVME; "" when
// there is neither (a multipart object with composite checksums).
func providerChecksum(etag, crc string, ct types.ChecksumType) string {
	etag = strings.Trim(etag, `"`)
	if storage.ValidMD5(strings.ToLower(etag)) {
		return storage.ProviderMD5(strings.ToLower(etag))
	}
	if crc != "" && (ct == "" || ct == types.ChecksumTypeFullObject) {
		return storage.AlgCRC64NVME + ":" + crc
	}
	return ""
}

func (s *Store) head(ctx context.Context, key object, id string) (*storage.Info, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(key.bucket),
		Key:          aws.String(key.key),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, err
	}
	return attrs{
		etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata, encoding: out.ContentEncoding,
		class: string(out.StorageClass), archive: out.ArchiveStatus, restore: out.Restore, dura: s.dura(),
	}.info(id)
}

// Head returns the item's Info.
func (s *Store) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, wrap("head", space+"/"+id, err)
	}
	info, err := s.head(ctx, key, id)
	return info, wrap("head", space+"/"+id, err)
}

// Get streams the item; the Info comes from the same response.
func (s *Store) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:       aws.String(key.bucket),
		Key:          aws.String(key.key),
		ChecksumMode: types.ChecksumModeEnabled,
	}, getOptions(ctx)...)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	info, err := attrs{
		etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata, encoding: out.ContentEncoding,
		class: string(out.StorageClass), restore: out.Restore, dura: s.dura(),
	}.info(id)
	if err != nil {
		out.Body.Close()
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	return out.Body, info, nil
}
