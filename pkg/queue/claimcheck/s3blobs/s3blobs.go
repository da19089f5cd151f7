package s3blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/queue/claimcheck"
)

// API is the part of *s3.Client Blobs uses.
type API interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Blobs stores each blob as the object prefix+key in bucket.
type Blobs struct {
	api    API
	bucket string
	prefix string
}

var _ claimcheck.Blobs = (*Blobs)(nil)

// New returns blob storage in bucket under prefix (which may be empty).
func New(api API, bucket, prefix string) *Blobs {
	return &Blobs{api: api, bucket: bucket, prefix: prefix}
}

func (b *Blobs) key(k string) *string { return aws.String(b.prefix + k) }

// Put writes the object.
func (b *Blobs) Put(ctx context.Context, key string, data []byte) error {
	_, err := b.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           b.key(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("s3blobs: put %s/%s: %w", b.bucket, b.prefix+key, err)
	}
	return nil
}

// Get reads the object; a missing one is claimcheck.ErrBlobNotFound.
func (b *Blobs) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := b.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: b.key(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nsk) || (errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")) {
			err = fmt.Errorf("%w: %w", claimcheck.ErrBlobNotFound, err)
		}
		return nil, fmt.Errorf("s3blobs: get %s/%s: %w", b.bucket, b.prefix+key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3blobs: get %s/%s: %w", b.bucket, b.prefix+key, err)
	}
	return data, nil
}

// Delete deletes the object (S3 answers success for a missing one).
func (b *Blobs) Delete(ctx context.Context, key string) error {
	if _, err := b.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: b.key(key)}); err != nil {
		return fmt.Errorf("s3blobs: delete %s/%s: %w", b.bucket, b.prefix+key, err)
	}
	return nil
}
