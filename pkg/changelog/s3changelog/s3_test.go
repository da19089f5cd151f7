package s3changelog_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/changelogtest"
	"github.com/millfleet/mill/pkg/changelog/s3changelog"
)

func TestS3(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	changelogtest.Run(t, changelogtest.Harness{New: func(t *testing.T) changelog.Log {
		bucket := testenv.Prefix(t) + "changes"
		if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, c, bucket)
		return s3changelog.New(c, bucket, "console-changes/")
	}})
}
