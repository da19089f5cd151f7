package azstore

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// props is what a blob's properties tell of an item.
type props struct {
	size     int64
	md5      []byte // Content-MD5
	etag     azcore.ETag
	modified time.Time
	mime     string
	tier     string
	inferred bool
	meta     map[string]*string
}

func propsOf(r blob.GetPropertiesResponse) props {
	p := props{md5: r.ContentMD5, meta: r.Metadata}
	if r.ContentLength != nil {
		p.size = *r.ContentLength
	}
	if r.ETag != nil {
		p.etag = *r.ETag
	}
	if r.LastModified != nil {
		p.modified = *r.LastModified
	}
	if r.ContentType != nil {
		p.mime = *r.ContentType
	}
	if r.AccessTier != nil {
		p.tier = *r.AccessTier
	}
	p.inferred = r.AccessTierInferred == nil || *r.AccessTierInferred
	return p
}

// info describes the blob as an item. The provider checksum is the
// blob's Content-MD5 (see the package doc, Checksums).
func (p props) info(id string) *storage.Info {
	info := objstore.Attrs{
		MD5:        meta(p.meta, MetaMD5),
		Size:       p.size,
		Mime:       p.mime,
		Modified:   p.modified,
		Revision:   string(p.etag),
		ContentMD5: p.md5,
		Props:      meta(p.meta, MetaProps),
	}.Info(id)
	if !p.inferred && !strings.EqualFold(p.tier, "Hot") {
		info.StorageClass = p.tier
		info.Archived = strings.EqualFold(p.tier, "Archive")
	}
	return info
}

func (s *Store) props(ctx context.Context, key string) (props, error) {
	r, err := s.c.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return props{}, err
	}
	return propsOf(r), nil
}

// listNames lists the blob names under prefix from start on (inclusive;
// a service that ignores it lists from the first), in byte-wise order as
// Azure lists them (objstore.Provider.ListNames).
func (s *Store) listNames(ctx context.Context, prefix, start string, pageSize int, each func(string) bool) error {
	opts := &container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix), MaxResults: to.Ptr(int32(min(pageSize, 5000)))}
	if start != "" {
		opts.StartFrom = to.Ptr(start)
	}
	p := s.c.NewListBlobsFlatPager(opts)
	for p.More() {
		resp, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, b := range resp.Segment.BlobItems {
			if b.Name != nil && !each(*b.Name) {
				return nil
			}
		}
	}
	return nil
}

// GetRange implements storage.RangeReader. The revision is the blob's
// ETag: the read is conditional on it (If-Match), so a rewritten item
// gives storage.ErrChanged.
func (s *Store) GetRange(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *storage.Info, error) {
	key, err := s.layout.ContentKey(space, id)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	bc := s.c.NewBlobClient(key)
	var gp *blob.GetPropertiesOptions
	if revision != "" {
		gp = &blob.GetPropertiesOptions{AccessConditions: ifMatch(azcore.ETag(revision))}
	}
	r, err := bc.GetProperties(ctx, gp)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, s.spaces.ReadErr(ctx, space, err))
	}
	p := propsOf(r)
	info := p.info(id)
	if info.Archived {
		return nil, nil, wrap("get", space+"/"+id, storage.ErrArchived)
	}
	off, n = objstore.ClampRange(off, n, p.size)
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), info, nil
	}
	d, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: off, Count: n}, AccessConditions: ifMatch(p.etag)})
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, s.spaces.ReadErr(ctx, space, err))
	}
	return d.Body, info, nil
}
