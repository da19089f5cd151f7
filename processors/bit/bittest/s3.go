package bittest

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// S3 puts stores 1 and 2 of e on the emulator (one new bucket, prefixes
// "1/" and "2/"; removed when the test ends) and returns the client and
// the bucket.
func (e *Env) S3(t *testing.T) (*s3.Client, string) {
	t.Helper()
	client := testenv.AWS(t).S3()
	bucket := testenv.Prefix(t) + "bit"
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	for _, id := range []string{"1", "2"} {
		s, err := s3store.New(client, s3store.Config{Bucket: bucket, Prefix: id + "/"})
		if err != nil {
			t.Fatal(err)
		}
		e.Wrap(id, func(storage.Provider) storage.Provider { return s })
	}
	return client, bucket
}

// ReplaceS3Object overwrites an object's bytes with body by a raw S3
// PutObject that keeps its metadata — "mill-md5", the MD5 Mill recorded,
// included — and its content type, as a careless tool or an attacker
// would: the object's ETag is then the new bytes' MD5, its recorded MD5
// the old one's.
func ReplaceS3Object(ctx context.Context, t testing.TB, client *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata[s3store.MetaMD5] == "" {
		t.Fatalf("s3://%s/%s has no %s metadata to keep", bucket, key, s3store.MetaMD5)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), Metadata: h.Metadata, ContentType: h.ContentType}); err != nil {
		t.Fatal(err)
	}
}
