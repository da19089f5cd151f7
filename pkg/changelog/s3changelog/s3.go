package s3changelog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/changelog"
)

// API is the part of the S3 client Log uses.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// maxEntry bounds what List reads of one entry.
const maxEntry = 1 << 20

// Log keeps each entry as the object PREFIX+ID.json, written with
// If-None-Match: * so an entry is never replaced. A page of List is one
// ListObjectsV2 and one GetObject per entry (eight at a time).
type Log struct {
	c      API
	bucket string
	prefix string
}

var _ changelog.Log = (*Log)(nil)

// New returns a change log under prefix ("" or ending in "/") of bucket.
func New(c API, bucket, prefix string) *Log { return &Log{c: c, bucket: bucket, prefix: prefix} }

// String names the log for messages.
func (s *Log) String() string { return "s3://" + s.bucket + "/" + s.prefix }

// Record implements changelog.Log.
func (s *Log) Record(ctx context.Context, c changelog.Change) (changelog.Change, error) {
	c, b, err := changelog.Prepare(c)
	if err != nil {
		return changelog.Change{}, err
	}
	_, err = s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + c.ID + ".json"),
		Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
		ContentType: aws.String("application/json"), IfNoneMatch: aws.String("*"),
	})
	if err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: record in %s: %w", s, err)
	}
	return c, nil
}

// List implements changelog.Log.
func (s *Log) List(ctx context.Context, after string, limit int) ([]changelog.Change, string, error) {
	if after != "" && !changelog.ValidID(after) {
		return nil, "", fmt.Errorf("changelog: %w: %q", changelog.ErrBadToken, after)
	}
	n := changelog.PageSize(limit)
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), MaxKeys: aws.Int32(int32(n) + 1)}
	if after != "" {
		in.StartAfter = aws.String(s.prefix + after + ".json")
	}
	out, err := s.c.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("changelog: list %s: %w", s, err)
	}
	var keys []string
	for _, o := range out.Contents {
		k := aws.ToString(o.Key)
		if id, ok := strings.CutSuffix(strings.TrimPrefix(k, s.prefix), ".json"); ok && changelog.ValidID(id) {
			keys = append(keys, k)
		}
	}
	next := ""
	if len(keys) > n {
		keys = keys[:n]
		next = strings.TrimSuffix(strings.TrimPrefix(keys[n-1], s.prefix), ".json")
	}
	changes := make([]changelog.Change, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			changes[i], errs[i] = s.get(ctx, k)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	return changes, next, nil
}

func (s *Log) get(ctx context.Context, key string) (changelog.Change, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: get s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxEntry))
	if err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: get s3://%s/%s: %w", s.bucket, key, err)
	}
	var c changelog.Change
	if err := json.Unmarshal(b, &c); err != nil {
		return changelog.Change{}, fmt.Errorf("changelog: s3://%s/%s: %w", s.bucket, key, err)
	}
	return c, nil
}
