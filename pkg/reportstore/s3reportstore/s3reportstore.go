// Package s3reportstore is the reportstore.Store in an S3 bucket (the
// reports bucket), under a prefix: one PutObject per report (S3 limits it to
// 5 GiB: about 20 million lines), one GetObject to serve it.
package s3reportstore

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/reportstore"
)

// API is the part of the S3 client Store uses.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Store keeps reports in Bucket under Prefix.
type Store struct {
	Client API
	Bucket string
	Prefix string // prepended to every key ("" or ending in "/")
}

var _ reportstore.Store = Store{}

// Put implements reportstore.Store.
func (s Store) Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (string, error) {
	k := s.Prefix + key
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(k),
		Body:          r,
		ContentLength: aws.Int64(size),
		ContentType:   aws.String("text/tab-separated-values; charset=utf-8"),
	})
	if err != nil {
		return "", fmt.Errorf("reportstore: put s3://%s/%s: %w", s.Bucket, k, err)
	}
	return "s3://" + s.Bucket + "/" + k, nil
}

// Open implements reportstore.Store: only s3://Bucket/Prefix... locations,
// without "..", are read.
func (s Store) Open(ctx context.Context, location string) (io.ReadCloser, int64, error) {
	key, ok := strings.CutPrefix(location, "s3://"+s.Bucket+"/")
	if !ok || !strings.HasPrefix(key, s.Prefix) || strings.Contains(key, "..") {
		return nil, 0, fmt.Errorf("%w: %q", reportstore.ErrForeign, location)
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, 0, fmt.Errorf("reportstore: get %s: %w", location, err)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}
