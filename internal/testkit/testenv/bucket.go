package testenv

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bucket creates the bucket Prefix(t)+suffix, with Object Lock enabled when
// lock is set (versioned; no default retention, so it can be removed), and
// removes it with everything in it when the test ends. It returns the
// bucket's name.
func Bucket(t testing.TB, c *s3.Client, suffix string, lock bool) string {
	t.Helper()
	bucket := Prefix(t) + suffix
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if lock {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	if _, err := c.CreateBucket(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	CleanupBucket(t, c, bucket)
	return bucket
}
