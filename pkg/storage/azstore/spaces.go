package azstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/pkg/storage"
)

// spaceRecord is the body of a space marker.
type spaceRecord struct {
	ACLs map[string]string `json:"acls"`
}

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
			name := (*b.Name)[len(s.cfg.Prefix):]
			if storage.ValidateSpaceID(name) == nil {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

func (s *Store) readSpace(ctx context.Context, space string) (*spaceRecord, error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return nil, err
	}
	r, err := s.c.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
		}
		return nil, err
	}
	defer r.Body.Close()
	var rec spaceRecord
	if err := json.NewDecoder(io.LimitReader(r.Body, 10<<20)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("space marker %s: %w", key, err)
	}
	if rec.ACLs == nil {
		rec.ACLs = map[string]string{}
	}
	return &rec, nil
}

// writeMarker writes a space marker; onlyNew makes it conditional on no
// blob having its name (If-None-Match: *).
func (s *Store) writeMarker(ctx context.Context, key string, rec *spaceRecord, onlyNew bool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	opts := &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/json")}}
	if onlyNew {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	}
	_, err = s.c.NewBlockBlobClient(key).Upload(ctx, nopCloser{bytes.NewReader(b)}, opts)
	return err
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// needSpace returns ErrNotFound unless the space marker exists.
func (s *Store) needSpace(ctx context.Context, space string) error {
	key, err := s.spaceKey(space)
	if err != nil {
		return err
	}
	_, err = s.c.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil && errors.Is(mapErr(err), storage.ErrNotFound) {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return err
}

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (s *Store) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

// CreateSpaceIfAbsent implements storage.SpaceCreator: the marker is
// written with If-None-Match: *, so exactly one of concurrent creators is
// told it created the space and the ACLs another set are kept.
func (s *Store) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return false, wrap("create space", space, err)
	}
	err = s.writeMarker(ctx, key, &spaceRecord{ACLs: map[string]string{}}, true)
	if conditionFailed(err) {
		return false, nil
	}
	return err == nil, wrap("create space", space, err)
}

// DeleteSpace deletes the marker of an empty space; a missing space is
// success.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	err := s.needSpace(ctx, space)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete space", space, err)
	}
	p := s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(s.cfg.Prefix + space + "/"), MaxResults: to.Ptr(int32(1))})
	page, err := p.NextPage(ctx)
	if err != nil {
		return wrap("delete space", space, err)
	}
	if len(page.Segment.BlobItems) > 0 {
		return wrap("delete space", space, storage.ErrSpaceNotEmpty)
	}
	key, _ := s.spaceKey(space)
	_, err = s.c.NewBlobClient(key).Delete(ctx, nil)
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	return wrap("delete space", space, err)
}

// SpaceACLs returns the space's ACLs from its marker.
func (s *Store) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	rec, err := s.readSpace(ctx, space)
	if err != nil {
		return nil, wrap("space acls", space, err)
	}
	return rec.ACLs, nil
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (s *Store) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := s.needSpace(ctx, space); err != nil {
		return wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	key, _ := s.spaceKey(space)
	return wrap("set space acls", space, s.writeMarker(ctx, key, &spaceRecord{ACLs: acls}, false))
}
