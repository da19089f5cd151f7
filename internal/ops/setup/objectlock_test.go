package setup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// lockedFor is how long the test's objects are locked: long enough to try
// to remove them, short enough that the cleanup can once the emulator's
// clock has passed it (a compliance lock cannot be lifted).
const lockedFor = 3 * time.Second

// cleanupLockedBucket deletes every version of bucket and the bucket once
// their retention has passed (until: the latest retain-until date).
func cleanupLockedBucket(t *testing.T, c *s3.Client, bucket string, until *time.Time) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The emulator refuses until its clock passes the date: wait for
		// it (a wall-clock retention; nothing else to wait on).
		if d := time.Until(until.Add(time.Second)); d > 0 {
			time.Sleep(d)
		}
		if err := testenv.EmptyBucket(ctx, c, bucket); err != nil {
			t.Errorf("cleanup: empty %s: %v", bucket, err)
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("cleanup: delete %s: %v", bucket, err)
		}
	})
}

func refused(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "InvalidRequest")
}

// TestEvidenceBucketObjectLock creates the evidence bucket against the
// emulator: Object Lock in compliance mode with the default retention,
// idempotent, updated when the retention changes; then a locked object
// version cannot be deleted (bypassing governance or not), a write of its
// key adds a version beside it, and a delete of the key only hides it.
func TestEvidenceBucketObjectLock(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3()
	ctx := context.Background()
	name := testenv.Prefix(t) + "evidence"
	var until time.Time
	cleanupLockedBucket(t, c, name, &until)

	b := &Bucket{Client: c, BucketName: name, Lock: &ObjectLock{Days: 1}}
	sum, err := Apply(ctx, []Resource{b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Results[0]; r.Status != StatusCreated || !strings.Contains(strings.Join(r.Details, "; "), "object lock: compliance mode, default retention 1 days") || len(r.Notes) != 0 {
		t.Fatalf("create: %s", r)
	}
	if sum, err = Apply(ctx, []Resource{b}, nil); err != nil || sum.Results[0].Status != StatusExists {
		t.Fatalf("again: %v %s", err, sum.Results[0])
	}
	b.Lock.Days = 30
	ch, err := b.Plan(ctx)
	if err != nil || ch.Action != ActionUpdate || !strings.Contains(strings.Join(ch.Reasons, ";"), "default retention 30 days") {
		t.Fatalf("plan of a new retention: %+v %v", ch, err)
	}
	if sum, err = Apply(ctx, []Resource{b}, nil); err != nil || sum.Results[0].Status != StatusUpdated {
		t.Fatalf("update: %v %s", err, sum.Results[0])
	}
	lock, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if r := lock.ObjectLockConfiguration.Rule.DefaultRetention; r.Mode != s3types.ObjectLockRetentionModeCompliance || aws.ToInt32(r.Days) != 30 {
		t.Fatalf("default retention %+v", r)
	}

	put := func(body string) string {
		until = time.Now().Add(lockedFor).UTC().Truncate(time.Second).Add(time.Second)
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("checkpoint"), Body: strings.NewReader(body),
			ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256, // S3 wants a checksum with a retention
			ObjectLockMode:    s3types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(until)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	v1 := put("go.sum database tree\n1\n")
	v2 := put("go.sum database tree\n2\n")
	if v1 == "" || v1 == v2 {
		t.Fatalf("versions %q and %q", v1, v2)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String("checkpoint"), VersionId: aws.String(v1)})
	if !refused(err) {
		t.Fatalf("delete of a locked version: %v, want it refused", err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String("checkpoint"), VersionId: aws.String(v1), BypassGovernanceRetention: aws.Bool(true)})
	if !refused(err) {
		t.Fatalf("delete of a locked version bypassing governance: %v, want it refused", err)
	}
	// (S3 also refuses to shorten a compliance retention or turn it into
	// governance; the emulator does not enforce that, so it is not
	// asserted here.)
	// Deleting the key only hides it behind a delete marker: the locked
	// versions stay, readable by id.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String("checkpoint")}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{v1, v2} {
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String("checkpoint"), VersionId: aws.String(v)}); err != nil {
			t.Errorf("version %s after a delete of the key: %v", v, err)
		}
	}
}

func TestEvidenceBucketConfig(t *testing.T) {
	cfg := Config{SkipDB: true, EvidenceBucket: "mill-evidence"}.WithDefaults()
	if cfg.EvidenceRetentionDays != DefaultEvidenceRetentionDays {
		t.Fatalf("default retention %d", cfg.EvidenceRetentionDays)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.EvidenceBucket = c.StateBucket }, `state and evidence bucket are both "mill-state"`},
		{func(c *Config) { c.EvidenceRetentionDays = -1 }, "evidence retention -1 days: want 1 to 36500"},
		{func(c *Config) { c.EvidenceRetentionDays = 36501 }, "evidence retention 36501 days"},
		{func(c *Config) { c.EvidenceBucket = "x" }, `evidence bucket "x": bucket names have 3 to 63 characters`},
	} {
		c := cfg
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate: %v, want %q", err, tc.want)
		}
	}
	// Clients that are never called: Resources only lists.
	offline := Clients{SQS: struct{ SQSAPI }{}, S3: struct{ S3API }{}, DynamoDB: struct{ DynamoDBAPI }{}}
	// Without an evidence bucket, none is set up.
	rs, err := Resources(Config{SkipDB: true}, offline)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if b, ok := r.(*Bucket); ok && b.Lock != nil {
			t.Fatalf("bucket %s locked without an evidence bucket", b.BucketName)
		}
	}
	rs, err = Resources(Config{SkipDB: true, EvidenceBucket: "mill-evidence", EvidenceRetentionDays: 400}, offline)
	if err != nil {
		t.Fatal(err)
	}
	var locked []string
	for _, r := range rs {
		if b, ok := r.(*Bucket); ok && b.Lock != nil && b.Lock.Days == 400 {
			locked = append(locked, b.BucketName)
		}
	}
	if len(locked) != 1 || locked[0] != "mill-evidence" {
		t.Fatalf("locked buckets %v", locked)
	}
}
