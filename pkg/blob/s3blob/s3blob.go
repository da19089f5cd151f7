// Package s3blob is a blob.Store in an S3 bucket under a key prefix: the
// blob of key k is the object prefix+k. A PutObject replaces an object
// atomically and carries the body's MD5 (which a bucket with Object Lock
// requires, and S3 checks). Delete sends one DeleteObject for one key and
// DeleteObjects, 1000 keys a request, for more; a store that is only read
// and written (the evidence bucket) needs no delete permission.
package s3blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/awsconfig"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/blob"
)

// API is the part of *s3.Client a Store uses.
type API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var _ API = (*s3.Client)(nil)

// Options are what a Store is made with; nil means the zero value.
type Options struct {
	// MaxSize bounds the blobs Get returns (blob.ErrTooLarge above it);
	// 0 means no bound.
	MaxSize int64
	// ContentType is the objects' Content-Type (default
	// application/octet-stream).
	ContentType string
}

// Store is a blob.Store in a bucket under a prefix.
type Store struct {
	api            API
	bucket, prefix string
	o              Options
}

var _ blob.Store = (*Store)(nil)

// New returns the store in bucket under prefix ("" or normally ending in
// "/"), made with o.
func New(api API, bucket, prefix string, o *Options) *Store {
	s := &Store{api: api, bucket: bucket, prefix: prefix}
	if o != nil {
		s.o = *o
	}
	if s.o.ContentType == "" {
		s.o.ContentType = "application/octet-stream"
	}
	return s
}

// String names the store ("s3://bucket/prefix").
func (s *Store) String() string { return "s3://" + s.bucket + "/" + s.prefix }

func (s *Store) object(key string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", fmt.Errorf("s3blob: %w", err)
	}
	return s.prefix + key, nil
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.object(key)
	if err != nil {
		return nil, err
	}
	where := "s3://" + s.bucket + "/" + k
	// ReadWhole: a blob is small, so it is read inside the call and a body
	// that breaks is retried by the SDK.
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}, awsconfig.ReadWhole)
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("s3blob: get %s: %w: %w", where, blob.ErrNotFound, err)
		}
		return nil, fmt.Errorf("s3blob: get %s: %w", where, err)
	}
	defer out.Body.Close()
	b, err := blob.ReadAll(out.Body, where, s.o.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("s3blob: %w", err)
	}
	return b, nil
}

func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var ae smithy.APIError
	return errors.As(err, &nsk) || errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	k, err := s.object(key)
	if err != nil {
		return err
	}
	sum := md5.Sum(data)
	_, err = s.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String(s.o.ContentType),
	})
	if err != nil {
		return fmt.Errorf("s3blob: put s3://%s/%s: %w", s.bucket, k, err)
	}
	return nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if err := blob.CheckKeys(keys); err != nil {
		return fmt.Errorf("s3blob: %w", err)
	}
	if len(keys) == 1 {
		k := s.prefix + keys[0]
		if _, err := s.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil && !notFound(err) {
			return fmt.Errorf("s3blob: delete s3://%s/%s: %w", s.bucket, k, err)
		}
		return nil
	}
	for chunk := range slices.Chunk(keys, 1000) {
		ids := make([]types.ObjectIdentifier, len(chunk))
		for i, k := range chunk {
			ids[i] = types.ObjectIdentifier{Key: aws.String(s.prefix + k)}
		}
		out, err := s.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(s.bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("s3blob: delete in s3://%s/%s: %w", s.bucket, s.prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("s3blob: delete s3://%s/%s: %s: %s (and %d more)", s.bucket, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}

// List implements blob.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.api, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3blob: list s3://%s/%s: %w", s.bucket, s.prefix+prefix, err)
		}
		for _, o := range page.Contents {
			if k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix); ok && blob.CheckKey(k) == nil {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}
