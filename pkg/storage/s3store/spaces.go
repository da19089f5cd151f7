package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/storage"
)

// ListSpaces returns the spaces (marker objects) in byte-wise order.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	if s.dura() {
		return s.duraSpaces(ctx)
	}
	out := []string{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.cfg.Bucket),
		Prefix:    aws.String(s.cfg.Prefix),
		Delimiter: aws.String("/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap("list spaces", s.cfg.Prefix, err)
		}
		for _, o := range page.Contents {
			if space, ok := s.layout.MarkerSpace(aws.ToString(o.Key)); ok {
				out = append(out, space)
			}
		}
	}
	return out, nil
}

// markers are the S3 calls behind the space markers of the Mill layout
// (objstore.Spaces).
type markers struct{ s *Store }

func (m markers) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := m.s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(m.s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

func (m markers) Stat(ctx context.Context, key string) error {
	_, err := m.s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(m.s.cfg.Bucket), Key: aws.String(key)})
	return err
}

// WriteMarker writes a space marker; onlyNew makes it conditional on no
// object having its name (If-None-Match: *).
func (m markers) WriteMarker(ctx context.Context, key string, body []byte, onlyNew bool) error {
	in := &s3.PutObjectInput{
		Bucket:      aws.String(m.s.cfg.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(body),
		ContentType: aws.String("application/json"),
	}
	if onlyNew {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := m.s.client.PutObject(ctx, in)
	return err
}

func (m markers) Delete(ctx context.Context, key string) error {
	_, err := m.s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(m.s.cfg.Bucket), Key: aws.String(key)})
	return err
}

func (m markers) Any(ctx context.Context, prefix string) (bool, error) {
	return m.s.anyUnder(ctx, m.s.cfg.Bucket, prefix)
}

func (markers) MapErr(err error) error         { return mapErr(err) }
func (markers) ConditionFailed(err error) bool { return conditionFailed(err) }

// anyUnder reports whether some object of bucket has a key starting with
// prefix.
func (s *Store) anyUnder(ctx context.Context, bucket, prefix string) (bool, error) {
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(bucket),
		Prefix:  aws.String(prefix),
		MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return false, err
	}
	return len(out.Contents) > 0, nil
}

// needSpace returns ErrNotFound unless the space marker exists.
func (s *Store) needSpace(ctx context.Context, space string) error {
	if s.dura() {
		return s.duraNeedSpace(ctx, space)
	}
	return s.spaces.Need(ctx, space)
}

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (s *Store) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

var _ storage.SpaceCreator = (*Store)(nil)

// CreateSpaceIfAbsent implements storage.SpaceCreator: after a HEAD finds
// no marker, the marker is written with If-None-Match: *, which S3 refuses
// (412, or 409 when a concurrent conditional write is in progress) once
// another writer created it — so the ACLs another writer set are kept and
// only one writer is told it created the space. An S3-compatible store
// that ignores the condition is back to last writer wins.
func (s *Store) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	if s.dura() {
		created, err := s.duraCreateSpace(ctx, space)
		return created, wrap("create space", space, err)
	}
	err := s.needSpace(ctx, space)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return false, wrap("create space", space, err)
	}
	return s.spaces.CreateSpaceIfAbsent(ctx, space)
}

// conditionFailed reports whether err is S3 refusing a conditional write
// because of its condition: 412 Precondition Failed, or 409
// ConditionalRequestConflict (a concurrent conditional write won).
func conditionFailed(err error) bool {
	switch errorCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}

// DeleteSpace deletes the marker of an empty space (DuraCloud layout:
// its bucket); a missing space is success.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	if !s.dura() {
		return s.spaces.DeleteSpace(ctx, space)
	}
	err := s.duraNeedSpace(ctx, space)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete space", space, err)
	}
	full, err := s.anyUnder(ctx, s.duraBucket(space), "")
	if err != nil {
		return wrap("delete space", space, err)
	}
	if full {
		return wrap("delete space", space, storage.ErrSpaceNotEmpty)
	}
	return wrap("delete space", space, s.duraDeleteSpace(ctx, space))
}

// SpaceACLs returns the space's ACLs from its marker.
func (s *Store) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	if s.dura() {
		acls, err := s.duraACLs(ctx, space)
		return acls, wrap("space acls", space, err)
	}
	return s.spaces.SpaceACLs(ctx, space)
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (s *Store) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if !s.dura() {
		return s.spaces.SetSpaceACLs(ctx, space, acls)
	}
	if err := s.duraNeedSpace(ctx, space); err != nil {
		return wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	return wrap("set space acls", space, s.duraSetACLs(ctx, space, acls))
}
