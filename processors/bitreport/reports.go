package bitreport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Reports stores report files.
//
// Put stores the size bytes of r under key (a slash-separated relative
// path such as "bit-integrity/acme/1/photos/20260101T000000Z.tsv"),
// replacing what the key held, and returns the stored file's location
// (s3://bucket/key or a file path). A failed Put leaves no partial file
// under key. Safe for concurrent use.
type Reports interface {
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (location string, err error)
}

// S3API is the part of the S3 client S3Reports uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3Reports keeps reports in a bucket (the reports bucket), under Prefix.
// One PutObject per report (S3 limits it to 5 GiB: about 20 million lines).
type S3Reports struct {
	Client S3API
	Bucket string
	Prefix string // prepended to every key ("" or ending in "/")
}

// Put implements Reports.
func (s *S3Reports) Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (string, error) {
	k := s.Prefix + key
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(k),
		Body:          r,
		ContentLength: aws.Int64(size),
		ContentType:   aws.String("text/tab-separated-values; charset=utf-8"),
	})
	if err != nil {
		return "", fmt.Errorf("bitreport: put s3://%s/%s: %w", s.Bucket, k, err)
	}
	return "s3://" + s.Bucket + "/" + k, nil
}

// DirReports keeps reports in a local directory (the dev mode): key is a
// path under Dir, written atomically (temporary file, rename).
type DirReports struct {
	Dir string
}

// Put implements Reports.
func (d *DirReports) Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (_ string, err error) {
	if key == "" || strings.Contains(key, "..") || filepath.IsAbs(key) {
		return "", fmt.Errorf("bitreport: report key %q: not a plain relative path", key)
	}
	path := filepath.Join(d.Dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return "", fmt.Errorf("bitreport: write %s: %w", path, err)
	}
	if n != size {
		return "", fmt.Errorf("bitreport: write %s: %d bytes, want %d", path, n, size)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return "", fmt.Errorf("bitreport: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	return path, nil
}
