package setup

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

func createBucket(t *testing.T, c *s3.Client, name string, versioned bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, c, name)
	if versioned {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
	}
}

func hasNote(notes []string, part string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, part) })
}

// TestStoreBucket: setup reports a store bucket without versioning, adds
// the rule expiring each store's trash prefix after the retention (keeping
// the bucket's other rules), and reports versioned buckets whose
// noncurrent versions are never expired or expire before the retention.
func TestStoreBucket(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3()
	ctx := context.Background()

	t.Run("unversioned", func(t *testing.T) {
		name := testenv.Prefix(t) + "store"
		createBucket(t, c, name, false)
		other := s3types.LifecycleRule{ID: aws.String("owners-rule"), Status: s3types.ExpirationStatusEnabled,
			Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("logs/")}, Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(3)}}
		if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(name),
			LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{other}}}); err != nil {
			t.Fatal(err)
		}
		b := &StoreBucket{Client: c, BucketName: name, Prefixes: []string{"mill/", ""}, Retention: 30 * 24 * time.Hour}
		ch, err := b.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Action != ActionUpdate || len(ch.Reasons) != 4 || !strings.Contains(ch.Reasons[0], "mill/.mill-trash/ after 30 days") ||
			!strings.Contains(ch.Reasons[1], `abort of incomplete multipart uploads under "mill/" after 7 days`) {
			t.Fatalf("plan: %+v", ch)
		}
		if !hasNote(ch.Notes, "not versioned") || !hasNote(ch.Notes, "copy") {
			t.Errorf("plan notes %q: want the bucket reported as not versioned", ch.Notes)
		}
		sum, err := Apply(ctx, []Resource{b}, nil)
		if err != nil || sum.Updated != 1 {
			t.Fatalf("apply: %+v, %v", sum, err)
		}
		out, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		prefixes, aborts := map[string]int32{}, map[string]int32{}
		for _, r := range out.Rules {
			if r.Filter != nil && r.Expiration != nil {
				prefixes[aws.ToString(r.Filter.Prefix)] = aws.ToInt32(r.Expiration.Days)
			}
			if r.Filter != nil && r.AbortIncompleteMultipartUpload != nil {
				aborts[aws.ToString(r.Filter.Prefix)] = aws.ToInt32(r.AbortIncompleteMultipartUpload.DaysAfterInitiation)
			}
		}
		if prefixes["mill/.mill-trash/"] != 30 || prefixes[".mill-trash/"] != 30 || prefixes["logs/"] != 3 {
			t.Errorf("lifecycle rules after apply: %v", prefixes)
		}
		if aborts["mill/"] != DefaultAbortUploadsDays || aborts[""] != DefaultAbortUploadsDays {
			t.Errorf("abandoned-upload rules after apply: %v", aborts)
		}
		if ch, err := b.Plan(ctx); err != nil || ch.Action != ActionNone {
			t.Errorf("second plan: %+v, %v; want nothing to do", ch, err)
		}
	})

	t.Run("versioned", func(t *testing.T) {
		name := testenv.Prefix(t) + "vstore"
		createBucket(t, c, name, true)
		b := &StoreBucket{Client: c, BucketName: name, Prefixes: []string{"p/"}, Retention: 30 * 24 * time.Hour}
		ch, err := b.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if hasNote(ch.Notes, "not versioned") || !hasNote(ch.Notes, "no lifecycle rule expires") {
			t.Errorf("notes %q: want a versioned bucket whose noncurrent versions are never expired", ch.Notes)
		}
		short := s3types.LifecycleRule{ID: aws.String("short"), Status: s3types.ExpirationStatusEnabled,
			Filter:                      &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
			NoncurrentVersionExpiration: &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(7)}}
		if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(name),
			LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{short}}}); err != nil {
			t.Fatal(err)
		}
		ch, err = b.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !hasNote(ch.Notes, `rule "short" expires noncurrent versions after 7 days`) {
			t.Errorf("notes %q: want the 7-day rule reported as shorter than the retention", ch.Notes)
		}
	})

	t.Run("missing", func(t *testing.T) {
		b := &StoreBucket{Client: c, BucketName: testenv.Prefix(t) + "absent", Prefixes: []string{""}, Retention: 24 * time.Hour}
		if _, err := b.Plan(ctx); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("plan of a missing store bucket: %v", err)
		}
	})
}
