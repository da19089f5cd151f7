package s3reportstore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/reportstore/reportstoretest"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
)

func TestS3(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	reportstoretest.Run(t, reportstoretest.Harness{New: func(t *testing.T) reportstoretest.Fixture {
		bucket := testenv.Prefix(t) + "reports"
		if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, c, bucket)
		return reportstoretest.Fixture{
			Store: s3reportstore.Store{Client: c, Bucket: bucket, Prefix: "reports/"},
			// The bucket without the prefix, and a look-alike bucket name.
			Foreign: []string{"s3://" + bucket + "/other/r/a.tsv", "s3://" + bucket + "x/reports/r/a.tsv"},
		}
	}})
}
