package s3blob_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/s3blob"
)

// TestConformance runs the suite against the emulator, under a prefix of a
// bucket each subtest creates and removes: a plain bucket, and one with
// Object Lock enabled (versioned; no default retention, so the test can
// remove it) as the evidence bucket is. The plain one also lists and
// deletes more than a page (1000 keys).
func TestConformance(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	for name, lock := range map[string]bool{"plain": false, "objectlock": true} {
		t.Run(name, func(t *testing.T) {
			h := blobtest.Harness{New: func(t *testing.T, o *blob.Options) blobtest.Fixture {
				bucket := testenv.Bucket(t, c, "blobs", lock)
				var so *s3blob.Options
				if o != nil {
					so = &s3blob.Options{MaxSize: o.MaxSize}
				}
				return blobtest.Fixture{Store: s3blob.New(c, bucket, "mill/", so), Plant: func(t *testing.T, name string, data []byte) {
					key := "mill/" + name
					if name == "" {
						key = "outside"
					}
					if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
						t.Fatal(err)
					}
				}}
			}}
			if !lock {
				h.ManyKeys = 1100
			}
			blobtest.Run(t, h)
		})
	}
}
