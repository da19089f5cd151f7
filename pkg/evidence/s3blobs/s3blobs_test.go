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
// bucket the test creates and removes.
func TestS3(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	blobstest.Run(t, func(t *testing.T) evidence.Blobs {
		bucket := testenv.Prefix(t) + "evidence"
		if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, c, bucket)
		return s3blobs.Store{Client: c, Bucket: bucket, Prefix: "mill/"}
	})
}
