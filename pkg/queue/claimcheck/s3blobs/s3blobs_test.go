package s3blobs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/claimcheck/s3blobs"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// A 1 MiB body through SQS and S3 on the local emulator.
func TestClaimCheckOverSQSAndS3(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	prefix := testenv.Prefix(t)
	sc, s3c := cfg.SQS(), cfg.S3()
	testenv.CleanupQueues(t, sc, prefix)
	bucket := prefix + "claims"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	if _, _, err := sqsqueue.Ensure(ctx, sc, prefix+"q", sqsqueue.EnsureConfig{VisibilityTimeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	inner, err := sqsqueue.Open(ctx, sc, prefix+"q", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	blobs := s3blobs.New(s3c, bucket, "mill/")
	q := claimcheck.New(inner, blobs, claimcheck.Config{KeyPrefix: "claims/"})

	big := bytes.Repeat([]byte("Mill ✓ claim check\n"), (1<<20)/20)
	if err := q.Send(ctx, queue.SendEntry{Body: big}); err != nil {
		t.Fatal(err)
	}
	var m *queue.Message
	for m == nil && ctx.Err() == nil {
		ms, err := q.Receive(ctx, 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 1 {
			m = ms[0]
		}
	}
	if m == nil {
		t.Fatal("nothing received")
	}
	if err := claimcheck.Unresolved(m); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Body, big) {
		t.Fatalf("received %d bytes, sent %d", len(m.Body), len(big))
	}
	key := m.Attributes[claimcheck.AttrRef]
	if _, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("mill/" + key)}); err != nil {
		t.Fatalf("blob object mill/%s: %v", key, err)
	}
	if err := q.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.Get(ctx, key); !errors.Is(err, claimcheck.ErrBlobNotFound) {
		t.Fatalf("blob after delete: %v, want ErrBlobNotFound", err)
	}
	if err := blobs.Delete(ctx, key); err != nil {
		t.Fatalf("deleting a missing blob: %v", err)
	}
}
