package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestSetupEvidenceBucket: --evidence-bucket plans the evidence bucket
// with Object Lock and its retention (a dry run: a compliance-locked
// bucket of a test could not be removed before its retention ends; the
// bucket itself is created and checked in internal/ops/setup), and a
// retention out of range is a usage error.
func TestSetupEvidenceBucket(t *testing.T) {
	cfg := testenv.AWS(t)
	n := newSetupNames(t, testenv.Schema(t))
	sq, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	n.cleanup(t, sq, s3c, ddb)
	bucket := n.prefix + "evidence"
	testenv.CleanupBucket(t, s3c, bucket)

	code, out, errOut := setupRun(t, nil, n.args("--dry-run", "--evidence-bucket", bucket, "--evidence-retention-days", "400")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, bucket) {
			line = l
		}
	}
	if !strings.Contains(line, "would create") || !strings.Contains(line, "object lock: compliance mode, default retention 400 days") {
		t.Fatalf("evidence bucket's line %q in\n%s", line, out)
	}
	if _, err := s3c.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Fatal("the dry run created the evidence bucket")
	}
	for _, days := range []string{"0", "36501", "-3"} {
		if code, _, errOut := setupRun(t, nil, "setup", "--skip-db", "--evidence-bucket", bucket, "--evidence-retention-days", days); code != 2 || !strings.Contains(errOut, "--evidence-retention-days") {
			t.Errorf("retention %s days: exit %d, %q", days, code, errOut)
		}
	}
}
