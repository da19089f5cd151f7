// Package s3blobs keeps an evidence log's blobs (evidence.Blobs) in an S3
// bucket under a prefix: one object per tile or checkpoint. The evidence
// bucket is meant to have S3 Object Lock in compliance mode (set up in a
// stack of its own), so a Put of an existing key adds a version and no
// version can be deleted before its retention ends; this package needs only
// PutObject, GetObject and ListObjectsV2.
package s3blobs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/evidence"
)

// API is the part of the S3 client Store uses.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Store is evidence.Blobs in Bucket under Prefix.
type Store struct {
	Client API
	Bucket string
	Prefix string // "" or ending in "/"
}

var _ evidence.Blobs = Store{}

func (s Store) key(k string) (string, error) {
	if err := evidence.CheckKey(k); err != nil {
		return "", err
	}
	if s.Prefix != "" && !strings.HasSuffix(s.Prefix, "/") {
		return "", fmt.Errorf("s3blobs: prefix %q does not end in /", s.Prefix)
	}
	return s.Prefix + k, nil
}

// Get implements evidence.Blobs.
func (s Store) Get(ctx context.Context, k string) ([]byte, error) {
	key, err := s.key(k)
	if err != nil {
		return nil, err
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return nil, fmt.Errorf("%w: s3://%s/%s", evidence.ErrNotFound, s.Bucket, key)
	}
	if err != nil {
		return nil, fmt.Errorf("s3blobs: get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, evidence.MaxBlob+1))
	if err != nil {
		return nil, fmt.Errorf("s3blobs: read s3://%s/%s: %w", s.Bucket, key, err)
	}
	if len(b) > evidence.MaxBlob {
		return nil, fmt.Errorf("s3blobs: s3://%s/%s is larger than %d bytes", s.Bucket, key, evidence.MaxBlob)
	}
	return b, nil
}

// Put implements evidence.Blobs. It sends the body's MD5 (which a bucket
// with Object Lock requires, and S3 checks).
func (s Store) Put(ctx context.Context, k string, data []byte) error {
	key, err := s.key(k)
	if err != nil {
		return err
	}
	sum := md5.Sum(data)
	_, err = s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("s3blobs: put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return nil
}

// List implements evidence.Blobs.
func (s Store) List(ctx context.Context, prefix string) ([]string, error) {
	if s.Prefix != "" && !strings.HasSuffix(s.Prefix, "/") {
		return nil, fmt.Errorf("s3blobs: prefix %q does not end in /", s.Prefix)
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3blobs: list s3://%s/%s: %w", s.Bucket, s.Prefix+prefix, err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.Prefix)
			if evidence.CheckKey(k) == nil {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}
