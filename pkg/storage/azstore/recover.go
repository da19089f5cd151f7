package azstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// trashItemPrefix is the name prefix of one item's trash copies.
func (s *Store) trashItemPrefix(space, id string) string {
	return s.layout.TrashItemPrefix(space, id)
}

// copyBlob copies src to dst server side (Copy Blob within the account;
// the source must still have ETag etag when it is not ""), with metadata
// m (nil: the source's), and waits for the copy to finish.
func (s *Store) copyBlob(ctx context.Context, src, dst, etag string, m map[string]*string) error {
	opts := &blob.StartCopyFromURLOptions{Metadata: m}
	if etag != "" {
		opts.SourceModifiedAccessConditions = &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(azETag(etag))}
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
		Read: func(ctx context.Context, key string) (*props, error) {
			p, err := s.props(ctx, key)
			return &p, err
		},
		Missing: func(err error) bool { return errors.Is(mapErr(err), storage.ErrNotFound) },
		Copy: func(ctx context.Context, p *props, key, tkey string) error {
			return s.copyBlob(ctx, key, tkey, string(p.etag), nil)
		},
		Stale: func(err error) bool { // the blob is gone, or has another ETag
			e := mapErr(err)
			return errors.Is(e, storage.ErrNotFound) || errors.Is(e, storage.ErrChanged)
		},
		Forget: s.deleteKey,
		What:   "blob",
	}.Preserve(ctx, key, s.trashItemPrefix(space, id), reason, p)
}

// Versions implements storage.Recoverer: the item's trash copies, newest
// first.
func (s *Store) Versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	vs, err := s.versions(ctx, space, id)
	return vs, wrap("versions", space+"/"+id, err)
}

func (s *Store) versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	if _, err := s.contentKey(space, id); err != nil {
		return nil, err
	}
	prefix := s.trashItemPrefix(space, id)
	out := []storage.Version{}
	pg := s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix), Include: container.ListBlobsInclude{Metadata: true}})
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil || b.Properties == nil {
				continue
			}
			name := strings.TrimPrefix(*b.Name, prefix)
			v, ok := objstore.TrashVersion(name)
			if !ok {
				continue // not a copy the store made
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
			v.Info = *p.info(id)
			out = append(out, v)
		}
	}
	objstore.NewestFirst(out)
	return out, nil
}

func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Restore implements storage.Recoverer: the version is copied (server
// side) back to the item's name, after what is there was kept recoverable
// in turn.
func (s *Store) Restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	info, err := s.restore(ctx, space, id, versionID)
	return info, wrap("restore", space+"/"+id, err)
}

func (s *Store) restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	key, src, err := s.spaces.RestoreSource(ctx, space, id, versionID, func() ([]storage.Version, error) { return s.versions(ctx, space, id) })
	if err != nil {
		return nil, err
	}
	from, err := s.props(ctx, src)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	if err := s.copyBlob(ctx, src, key, string(from.etag), maps.Clone(from.meta)); err != nil {
		undo()
		return nil, err
	}
	p, err := s.props(ctx, key)
	if err != nil {
		return nil, err
	}
	if p.size != from.size || hex.EncodeToString(p.md5) != hex.EncodeToString(from.md5) {
		return nil, fmt.Errorf("%w: restored blob has Content-MD5 %x and %d bytes, the version %x and %d", storage.ErrChecksumMismatch, p.md5, p.size, from.md5, from.size)
	}
	return p.info(id), nil
}
