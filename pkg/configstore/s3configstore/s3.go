package s3configstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/configstore"
)

// API is the part of the S3 client Store uses.
type API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
}

// User metadata keys of a version (x-amz-meta-…). Values are
// percent-encoded: S3 metadata travels in HTTP headers, which carry ASCII.
const (
	metaAuthor = "mill-author"
	metaAction = "mill-action"
)

// Store is a configstore.Store over a bucket, files under a key prefix. History needs the
// bucket's versioning (Versioning reports it); without it only the current
// version is kept.
type Store struct {
	c       API
	bucket  string
	prefix  string
	maxSize int64
}

var _ configstore.Store = (*Store)(nil)

// New returns a store over bucket; file names are appended to prefix
// ("" or ending in "/"). maxSize ≤ 0 means DefaultMaxSize.
func New(c API, bucket, prefix string, maxSize int64) *Store {
	if maxSize <= 0 {
		maxSize = configstore.DefaultMaxSize
	}
	return &Store{c: c, bucket: bucket, prefix: prefix, maxSize: maxSize}
}

func (s *Store) key(name string) string { return s.prefix + name }

// Where implements configstore.Store.
func (s *Store) Where(name string) string { return "s3://" + s.bucket + "/" + s.key(name) }

// Versioning reports whether the bucket keeps object versions (history and
// restore need it).
func (s *Store) Versioning(ctx context.Context) (bool, error) {
	out, err := s.c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		return false, fmt.Errorf("configstore: versioning of s3://%s: %w", s.bucket, err)
	}
	return out.Status == s3types.BucketVersioningStatusEnabled, nil
}

// Get implements configstore.Store.
func (s *Store) Get(ctx context.Context, name string) (*configstore.File, error) {
	return s.get(ctx, name, "")
}

// GetVersion implements configstore.Store.
func (s *Store) GetVersion(ctx context.Context, name, id string) (*configstore.File, error) {
	if id == "" {
		return nil, fmt.Errorf("%s: empty version id: %w", s.Where(name), configstore.ErrNotFound)
	}
	return s.get(ctx, name, id)
}

func (s *Store) get(ctx context.Context, name, id string) (*configstore.File, error) {
	if err := configstore.CheckName(name); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(name))}
	if id != "" {
		in.VersionId = aws.String(id)
	}
	out, err := s.c.GetObject(ctx, in, awsconfig.ReadWhole)
	if err != nil {
		if notFound(err) || (id != "" && badVersion(err)) {
			return nil, fmt.Errorf("%s%s: %w", s.Where(name), versionSuffix(id), configstore.ErrNotFound)
		}
		return nil, fmt.Errorf("configstore: get %s%s: %w", s.Where(name), versionSuffix(id), err)
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); n > s.maxSize {
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit: %w", s.Where(name), n, s.maxSize, configstore.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, s.maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("configstore: get %s: %w", s.Where(name), err)
	}
	if int64(len(data)) > s.maxSize {
		return nil, fmt.Errorf("%s: over the %d-byte limit: %w", s.Where(name), s.maxSize, configstore.ErrTooLarge)
	}
	v := configstore.Version{
		ID: cmp.Or(aws.ToString(out.VersionId), "null"), ETag: aws.ToString(out.ETag),
		Time: aws.ToTime(out.LastModified), Size: int64(len(data)), Meta: decodeMeta(out.Metadata),
	}
	v.Current = id == ""
	return &configstore.File{Data: data, Version: v}, nil
}

// Put implements configstore.Store.
func (s *Store) Put(ctx context.Context, name string, data []byte, cond configstore.Cond, meta configstore.Meta) (configstore.Version, error) {
	if err := configstore.CheckName(name); err != nil {
		return configstore.Version{}, err
	}
	if int64(len(data)) > s.maxSize {
		return configstore.Version{}, fmt.Errorf("%s: %d bytes, over the %d-byte limit: %w", s.Where(name), len(data), s.maxSize, configstore.ErrTooLarge)
	}
	in := &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key(name)),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ContentType: aws.String("application/json"), Metadata: encodeMeta(meta),
	}
	switch {
	case cond.IfAbsent:
		in.IfNoneMatch = aws.String("*")
	case cond.IfMatch != "":
		in.IfMatch = aws.String(cond.IfMatch)
	}
	out, err := s.c.PutObject(ctx, in)
	if err != nil {
		if conflict(err, cond) {
			return configstore.Version{}, fmt.Errorf("%s: %w", s.Where(name), configstore.ErrConflict)
		}
		return configstore.Version{}, fmt.Errorf("configstore: put %s: %w", s.Where(name), err)
	}
	return configstore.Version{
		ID: cmp.Or(aws.ToString(out.VersionId), "null"), ETag: aws.ToString(out.ETag),
		Time: time.Now().UTC(), Size: int64(len(data)), Current: true, Meta: meta,
	}, nil
}

// Delete implements configstore.Store. Meta cannot travel with an S3 delete marker:
// record who deleted elsewhere (the console's change log does).
func (s *Store) Delete(ctx context.Context, name string, cond configstore.Cond, _ configstore.Meta) error {
	if err := configstore.CheckName(name); err != nil {
		return err
	}
	if cond.IfAbsent {
		return fmt.Errorf("configstore: delete %s: IfAbsent makes no sense for a delete", s.Where(name))
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(name))}
	if cond.IfMatch != "" {
		in.IfMatch = aws.String(cond.IfMatch)
	}
	if _, err := s.c.DeleteObject(ctx, in); err != nil {
		if conflict(err, cond) {
			return fmt.Errorf("%s: %w", s.Where(name), configstore.ErrConflict)
		}
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("configstore: delete %s: %w", s.Where(name), err)
	}
	return nil
}

// History implements configstore.Store: the object versions and delete markers of the
// key, newest first, with the metadata of each version (one HeadObject per
// version returned).
func (s *Store) History(ctx context.Context, name string, limit int) ([]configstore.Version, error) {
	if err := configstore.CheckName(name); err != nil {
		return nil, err
	}
	key := s.key(name)
	var vs []configstore.Version
	p := s3.NewListObjectVersionsPaginator(s.c, &s3.ListObjectVersionsInput{Bucket: aws.String(s.bucket), Prefix: aws.String(key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("configstore: history of %s: %w", s.Where(name), err)
		}
		for _, o := range page.Versions {
			if aws.ToString(o.Key) == key {
				vs = append(vs, configstore.Version{ID: cmp.Or(aws.ToString(o.VersionId), "null"), ETag: aws.ToString(o.ETag),
					Time: aws.ToTime(o.LastModified), Size: aws.ToInt64(o.Size), Current: aws.ToBool(o.IsLatest)})
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				vs = append(vs, configstore.Version{ID: cmp.Or(aws.ToString(m.VersionId), "null"),
					Time: aws.ToTime(m.LastModified), Deleted: true, Current: aws.ToBool(m.IsLatest)})
			}
		}
	}
	// Newest first; at equal times the current one first.
	slices.SortStableFunc(vs, func(a, b configstore.Version) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		switch {
		case a.Current && !b.Current:
			return -1
		case b.Current && !a.Current:
			return 1
		}
		return 0
	})
	if limit > 0 && len(vs) > limit {
		vs = vs[:limit]
	}
	if err := s.fillMeta(ctx, key, vs); err != nil {
		return nil, fmt.Errorf("configstore: history of %s: %w", s.Where(name), err)
	}
	return vs, nil
}

// fillMeta reads the metadata of each version, eight at a time.
func (s *Store) fillMeta(ctx context.Context, key string, vs []configstore.Version) error {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	errs := make([]error, len(vs))
	for i := range vs {
		if vs[i].Deleted {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), VersionId: aws.String(vs[i].ID)})
			if err != nil {
				if !notFound(err) { // removed meanwhile: keep it without metadata
					errs[i] = err
				}
				return
			}
			vs[i].Meta = decodeMeta(out.Metadata)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func encodeMeta(m configstore.Meta) map[string]string {
	out := map[string]string{}
	if m.Author != "" {
		out[metaAuthor] = url.PathEscape(m.Author)
	}
	if m.Action != "" {
		out[metaAction] = url.PathEscape(m.Action)
	}
	return out
}

func decodeMeta(md map[string]string) configstore.Meta {
	dec := func(k string) string {
		v := md[k]
		if u, err := url.PathUnescape(v); err == nil {
			return u
		}
		return v
	}
	return configstore.Meta{Author: dec(metaAuthor), Action: dec(metaAction)}
}

func versionSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (version " + id + ")"
}

func apiCode(err error) string {
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	if re, ok := errors.AsType[*awshttp.ResponseError](err); ok {
		return re.HTTPStatusCode()
	}
	return 0
}

func notFound(err error) bool {
	if _, ok := errors.AsType[*s3types.NoSuchKey](err); ok {
		return true
	}
	switch apiCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchVersion":
		return true
	}
	return httpStatus(err) == 404
}

// badVersion: S3 answers a malformed version id with 400 InvalidArgument
// and a delete marker's id with 405 MethodNotAllowed.
func badVersion(err error) bool {
	c := apiCode(err)
	return c == "InvalidArgument" || c == "MethodNotAllowed" || httpStatus(err) == 405
}

// conflict reports whether err is the failure of a conditional request's
// condition: 412 Precondition Failed, 409 ConditionalRequestConflict (a
// concurrent conditional write won), or — with If-Match — 404, the object
// being gone.
func conflict(err error, cond configstore.Cond) bool {
	if cond == (configstore.Cond{}) {
		return false
	}
	switch apiCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	switch httpStatus(err) {
	case 412, 409:
		return true
	case 404:
		return cond.IfMatch != ""
	}
	return false
}
