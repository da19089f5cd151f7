package s3blobs_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/blobstest"
	"github.com/millfleet/mill/pkg/evidence/s3blobs"
)

// TestS3 runs the Blobs suite against the emulator, under a prefix of a
// bucket the test creates and removes: a plain bucket, and one with
// Object Lock enabled (versioned; no default retention, so the test can
// remove it) as the evidence bucket will be.
func TestS3(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	for name, lock := range map[string]bool{"plain": false, "objectlock": true} {
		t.Run(name, func(t *testing.T) {
			blobstest.Run(t, func(t *testing.T) evidence.Blobs {
				bucket := testenv.Prefix(t) + "evidence"
				in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
				if lock {
					in.ObjectLockEnabledForBucket = aws.Bool(true)
				}
				if _, err := c.CreateBucket(context.Background(), in); err != nil {
					t.Fatal(err)
				}
				testenv.CleanupBucket(t, c, bucket)
				return s3blobs.Store{Client: c, Bucket: bucket, Prefix: "mill/"}
			})
		})
	}
}
