package azstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// copyBlob copies src to dst server side (Copy Blob within the account;
// the source must still have ETag etag when it is not ""), with metadata
// m (nil: the source's), and waits for the copy to finish.
func (s *Store) copyBlob(ctx context.Context, src, dst, etag string, m map[string]*string) error {
	opts := &blob.StartCopyFromURLOptions{Metadata: m}
	if etag != "" {
		opts.SourceModifiedAccessConditions = &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(azcore.ETag(etag))}
	}
	dc := s.c.NewBlobClient(dst)
	r, err := dc.StartCopyFromURL(ctx, s.c.NewBlobClient(src).URL(), opts)
	if err != nil {
		return err
	}
	status := r.CopyStatus
	for wait := 50 * time.Millisecond; status != nil && *status == blob.CopyStatusTypePending; wait = min(2*wait, 2*time.Second) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		p, err := dc.GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		status = p.CopyStatus
	}
	if status != nil && *status != blob.CopyStatusTypeSuccess {
		return fmt.Errorf("copy of %s to %s: %s", storage.QuoteID(src), storage.QuoteID(dst), *status)
	}
	return nil
}

// preserve keeps the blob at key recoverable before it is deleted or
// replaced for reason: a server-side copy of that ETag under the trash
// prefix (objstore.Preserver). p is the blob's properties when the caller
// has them, else they are read.
func (s *Store) preserve(ctx context.Context, key, space, id string, p *props, reason string) (undo func(), err error) {
	return objstore.Preserver[props]{
		Read:    s.propsPtr,
		Missing: s.spaces.NotFound,
		Copy: func(ctx context.Context, p *props, key, tkey string) error {
			return s.copyBlob(ctx, key, tkey, string(p.etag), nil)
		},
		Stale: func(err error) bool { // the blob is gone, or has another ETag
			e := mapErr(err)
			return errors.Is(e, storage.ErrNotFound) || errors.Is(e, storage.ErrChanged)
		},
		Forget: s.deleteKey,
		What:   "blob",
	}.Preserve(ctx, key, s.layout.TrashItemPrefix(space, id), reason, p)
}

func (s *Store) propsPtr(ctx context.Context, key string) (*props, error) {
	p, err := s.props(ctx, key)
	return &p, err
}

// recovery lists the trash copies (storage.Recoverer, by
// objstore.Methods) and copies one back with its metadata (Copy Blob).
func (s *Store) recovery() objstore.Recovery[props] {
	return objstore.Recovery[props]{
		List:     s.listProps,
		Attrs:    s.propsPtr,
		Preserve: s.preserve,
		// Set Blob Metadata: the bytes stay, the ETag and modified time
		// change.
		Patch: func(p *props, newProps map[string]string) (func(context.Context, string) error, error) {
			m, err := metadata(meta(p.meta, MetaMD5), meta(p.meta, MetaCRC64), newProps)
			return func(ctx context.Context, key string) error {
				_, err := s.c.NewBlobClient(key).SetMetadata(ctx, m, &blob.SetMetadataOptions{AccessConditions: ifMatch(p.etag)})
				return err
			}, err
		},
		Remove: func(ctx context.Context, key string, p *props) error {
			_, err := s.c.NewBlobClient(key).Delete(ctx, &blob.DeleteOptions{AccessConditions: ifMatch(p.etag)})
			return err
		},
		Copy: func(ctx context.Context, src, dst string, from *props) error {
			return s.copyBlob(ctx, src, dst, string(from.etag), maps.Clone(from.meta))
		},
		Sum:  func(p *props) ([]byte, int64) { return p.md5, p.size },
		Info: func(p *props, id string) *storage.Info { return p.info(id) },
		What: "blob",
	}
}

// listProps calls each with the name and properties of every blob under
// prefix.
func (s *Store) listProps(ctx context.Context, prefix string, each func(name string, p *props)) error {
	pg := s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix), Include: container.ListBlobsInclude{Metadata: true}})
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil || b.Properties == nil {
				continue
			}
			p := props{md5: b.Properties.ContentMD5, meta: b.Metadata, inferred: true}
			p.size = derefOr(b.Properties.ContentLength)
			if b.Properties.ETag != nil {
				p.etag = *b.Properties.ETag
			}
			if b.Properties.LastModified != nil {
				p.modified = *b.Properties.LastModified
			}
			if b.Properties.ContentType != nil {
				p.mime = *b.Properties.ContentType
			}
			each(*b.Name, &p)
		}
	}
	return nil
}

func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// ifMatch makes a request conditional on the blob's ETag.
func ifMatch(etag azcore.ETag) *blob.AccessConditions {
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(etag)}}
}
