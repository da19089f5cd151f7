package azstore

import (
	"bytes"
	"context"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// ListSpaces returns the spaces (marker blobs) in byte-wise order.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	out := []string{}
	p := s.c.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr(s.cfg.Prefix)})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap("list spaces", s.cfg.Prefix, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			if space, ok := s.layout.MarkerSpace(*b.Name); ok {
				out = append(out, space)
			}
		}
	}
	return out, nil
}

// markers are the Azure calls behind the space markers (objstore.Spaces).
type markers struct{ s *Store }

func (m markers) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := m.s.c.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		return nil, err
	}
	return r.Body, nil
}

func (m markers) Stat(ctx context.Context, key string) error {
	_, err := m.s.c.NewBlobClient(key).GetProperties(ctx, nil)
	return err
}

// WriteMarker writes a space marker; onlyNew makes it conditional on no
// blob having its name (If-None-Match: *).
func (m markers) WriteMarker(ctx context.Context, key string, body []byte, onlyNew bool) error {
	opts := &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/json")}}
	if onlyNew {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	}
	_, err := m.s.c.NewBlockBlobClient(key).Upload(ctx, nopCloser{bytes.NewReader(body)}, opts)
	return err
}

func (m markers) Delete(ctx context.Context, key string) error {
	_, err := m.s.c.NewBlobClient(key).Delete(ctx, nil)
	return err
}

func (m markers) Any(ctx context.Context, prefix string) (bool, error) {
	p := m.s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix), MaxResults: to.Ptr(int32(1))})
	page, err := p.NextPage(ctx)
	if err != nil {
		return false, err
	}
	return len(page.Segment.BlobItems) > 0, nil
}

func (markers) MapErr(err error) error         { return mapErr(err) }
func (markers) ConditionFailed(err error) bool { return conditionFailed(err) }

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }
