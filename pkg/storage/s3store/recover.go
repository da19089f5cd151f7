package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// Recoverability (storage.Recoverer; see the package doc, Recovery).
const (
	// TrashPrefix is where, under the store's prefix, the store keeps a
	// copy of what it deletes or replaces when the bucket is not
	// versioned. Lifecycle rules expire it (millctl setup).
	TrashPrefix = objstore.TrashPrefix

	// versioningCheckEvery is how long the bucket's versioning status is
	// trusted before it is asked again.
	versioningCheckEvery = 5 * time.Minute
	// maxVersions bounds how many S3 versions Versions reads (one HEAD
	// each), newest first.
	maxVersions = 100

	versionIDPrefix = "version:"
)

// versioning returns the bucket's versioning status ("" = never enabled,
// Enabled, Suspended). A caller that may not ask (AccessDenied) or an
// endpoint that does not implement it gets "": the store then keeps trash
// copies, which is safe, only dearer.
func (s *Store) versioning(ctx context.Context) (types.BucketVersioningStatus, error) {
	if s.dura() {
		// A bucket per space: trash copies in the store's own bucket,
		// whatever the space buckets' versioning.
		return "", nil
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if !s.vchecked.IsZero() && time.Since(s.vchecked) < versioningCheckEvery {
		return s.vstatus, nil
	}
	out, err := s.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.cfg.Bucket)})
	switch code := errorCode(err); {
	case err == nil:
		s.vstatus = out.Status
	case code == "AccessDenied" || code == "NotImplemented":
		s.vstatus = ""
	default:
		return "", fmt.Errorf("get the versioning of bucket %s: %w", s.cfg.Bucket, err)
	}
	s.vchecked = time.Now()
	return s.vstatus, nil
}

// Versioned reports whether the store's bucket has versioning enabled (so
// deletes and overwrites cost no trash copy).
func (s *Store) Versioned(ctx context.Context) (bool, error) {
	v, err := s.versioning(ctx)
	return v == types.BucketVersioningStatusEnabled, err
}

// preserve keeps the object at key recoverable before it is deleted or
// replaced for reason. In a versioned bucket S3 keeps the previous
// version itself: nothing to do. Otherwise the object is copied (server
// side) under the trash prefix; info is the object's Info when the caller
// has it (the copy is then conditional on its Revision: ErrChanged when
// the object was rewritten since), else it is read (a missing object — a
// first write — is not copied). undo removes the copy when the
// replacement then fails.
func (s *Store) preserve(ctx context.Context, key object, space, id string, info *storage.Info, reason string) (undo func(), err error) {
	undo = func() {}
	v, err := s.versioning(ctx)
	if err != nil || v == types.BucketVersioningStatusEnabled {
		return undo, err
	}
	if info == nil {
		info, err = s.head(ctx, key, id)
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return undo, nil
		}
		if err != nil {
			return undo, err
		}
	} else {
		key.ifMatch = info.Revision
	}
	meta, err := s.encodeMeta(info.Checksum, info.Properties)
	if err != nil {
		return undo, err
	}
	tkey := object{bucket: s.cfg.Bucket, key: s.layout.TrashItemPrefix(space, id) + objstore.TrashName(time.Now(), objstore.RandHex(), reason)}
	if _, err := s.copyObject(ctx, key, tkey, info.Size, meta, info.MimeType); err != nil {
		return undo, fmt.Errorf("keep the replaced object recoverable under %s: %w", TrashPrefix, err)
	}
	return func() { s.deleteKey(ctx, tkey) }, nil
}

// Versions implements storage.Recoverer: the item's noncurrent S3
// versions (where the bucket is or was versioned; at most the newest 100)
// and its trash copies, newest first. Each is read with a HEAD for its
// checksum, mimetype and properties.
func (s *Store) Versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	vs, err := s.versions(ctx, space, id)
	return vs, wrap("versions", space+"/"+id, err)
}

func (s *Store) versions(ctx context.Context, space, id string) ([]storage.Version, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, err
	}
	var out []storage.Version
	v, err := s.versioning(ctx)
	if err != nil {
		return nil, err
	}
	if v != "" {
		if out, err = s.s3Versions(ctx, key, id); err != nil {
			return nil, err
		}
	}
	trash, err := s.trashVersions(ctx, space, id)
	if err != nil {
		return nil, err
	}
	out = append(out, trash...)
	objstore.NewestFirst(out)
	return out, nil
}

// listed is a version or delete marker of the item's key.
type listed struct {
	version  string
	latest   bool
	modified time.Time
}

// s3Versions lists the noncurrent versions of key, newest first, in the
// order S3 lists them. A version's Reason is deleted when a delete marker
// was made after it and before the next newer version (S3 lists markers
// apart from versions, with times to the second, so a marker made in the
// same second as that version is not seen between them), properties when
// the next newer version holds the same MD5, overwritten otherwise.
func (s *Store) s3Versions(ctx context.Context, o object, id string) ([]storage.Version, error) {
	key := o.key
	var vers, markers []listed
	p := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{Bucket: aws.String(o.bucket), Prefix: aws.String(key)})
	for p.HasMorePages() && len(vers) <= maxVersions {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) == key {
				vers = append(vers, listed{version: aws.ToString(v.VersionId), latest: aws.ToBool(v.IsLatest), modified: aws.ToTime(v.LastModified)})
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				markers = append(markers, listed{version: aws.ToString(m.VersionId), latest: aws.ToBool(m.IsLatest), modified: aws.ToTime(m.LastModified)})
			}
		}
	}
	vers = vers[:min(len(vers), maxVersions+1)]
	// firstMarker returns the oldest marker made at or after from and
	// strictly before to (to zero: no bound).
	firstMarker := func(from, to time.Time) (time.Time, bool) {
		var at time.Time
		found := false
		for _, m := range markers {
			if !m.modified.Before(from) && (to.IsZero() || m.modified.Before(to)) && (!found || m.modified.Before(at)) {
				at, found = m.modified, true
			}
		}
		return at, found
	}
	var out []storage.Version
	var newer *storage.Info // the Info of vers[j-1]
	for j, l := range vers {
		info, err := s.headVersion(ctx, object{bucket: o.bucket, key: key, version: l.version}, id)
		if err != nil {
			return nil, err
		}
		if !l.latest {
			v := storage.Version{ID: versionIDPrefix + l.version, Info: *info, Reason: storage.ReplacedByOverwrite}
			if j == 0 {
				// No newer version: the current state is a delete marker.
				v.Reason, v.Replaced = storage.ReplacedByDelete, l.modified
				if at, ok := firstMarker(l.modified, time.Time{}); ok {
					v.Replaced = at
				}
			} else {
				v.Replaced = vers[j-1].modified
				if at, ok := firstMarker(l.modified, vers[j-1].modified); ok && at.After(l.modified) {
					v.Reason, v.Replaced = storage.ReplacedByDelete, at
				} else if newer != nil && newer.Checksum == info.Checksum {
					v.Reason = storage.ReplacedByProperties
				}
			}
			v.Replaced = v.Replaced.UTC()
			out = append(out, v)
		}
		newer = info
	}
	return out, nil
}

func (s *Store) headVersion(ctx context.Context, o object, id string) (*storage.Info, error) {
	version := o.version
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(o.bucket),
		Key:          aws.String(o.key),
		VersionId:    aws.String(version),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		// A HEAD's error has no body: S3 answers 405 for a delete marker
		// and 400 for a version ID that is not one of this key's.
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			switch re.HTTPStatusCode() {
			case http.StatusMethodNotAllowed:
				return nil, fmt.Errorf("%w: version %q is a delete marker", storage.ErrNotFound, storage.ShortID(version))
			case http.StatusBadRequest:
				return nil, fmt.Errorf("%w: no version %q: %w", storage.ErrNotFound, storage.ShortID(version), err)
			}
		}
		return nil, err
	}
	return attrs{
		etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata, encoding: out.ContentEncoding, dura: s.dura(),
	}.info(id)
}

// trashVersions lists the item's trash copies.
func (s *Store) trashVersions(ctx context.Context, space, id string) ([]storage.Version, error) {
	prefix := s.layout.TrashItemPrefix(space, id)
	var out []storage.Version
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			v, ok := objstore.TrashVersion(name)
			if !ok {
				continue // not a copy the store made
			}
			info, err := s.head(ctx, object{bucket: s.cfg.Bucket, key: prefix + name}, id)
			if errors.Is(mapErr(err), storage.ErrNotFound) {
				continue // expired meanwhile
			}
			if err != nil {
				return nil, err
			}
			v.Info = *info
			out = append(out, v)
		}
	}
	return out, nil
}

// Restore implements storage.Recoverer: the version is copied (server
// side) back to the item's key, after what is there was kept recoverable
// in turn.
func (s *Store) Restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	info, err := s.restore(ctx, space, id, versionID)
	return info, wrap("restore", space+"/"+id, err)
}

func (s *Store) restore(ctx context.Context, space, id, versionID string) (*storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, err
	}
	versionID, err = objstore.PickVersion(versionID, func() ([]storage.Version, error) { return s.versions(ctx, space, id) })
	if err != nil {
		return nil, err
	}
	var src object
	if strings.HasPrefix(versionID, objstore.TrashIDPrefix) {
		name, ok := objstore.CutTrashID(versionID)
		if !ok {
			return nil, objstore.NoVersion(versionID)
		}
		src = object{bucket: s.cfg.Bucket, key: s.layout.TrashItemPrefix(space, id) + name}
	} else if v, ok := strings.CutPrefix(versionID, versionIDPrefix); ok && v != "" {
		src = object{bucket: key.bucket, key: key.key, version: v}
	} else {
		return nil, objstore.NoVersion(versionID)
	}
	if err := s.needSpace(ctx, space); err != nil {
		return nil, err
	}
	var from *storage.Info
	if src.version != "" {
		from, err = s.headVersion(ctx, src, id)
	} else {
		from, err = s.head(ctx, src, id)
	}
	if err != nil {
		return nil, err
	}
	meta, err := s.encodeMeta(from.Checksum, from.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	if _, err := s.copyObject(ctx, src, key, from.Size, meta, from.MimeType); err != nil {
		undo()
		return nil, err
	}
	info, err := s.head(ctx, key, id)
	if err != nil {
		return nil, err
	}
	if info.Checksum != from.Checksum || info.Size != from.Size {
		return nil, fmt.Errorf("%w: restored object has MD5 %s and %d bytes, the version %s and %d", storage.ErrChecksumMismatch, info.Checksum, info.Size, from.Checksum, from.Size)
	}
	return info, nil
}
