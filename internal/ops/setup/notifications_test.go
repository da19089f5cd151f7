package setup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/s3event"
)

// TestNotificationResourcesOnEmulator: the first setup creates the queue
// policy and the bucket notification, the second finds nothing to do, and an
// object put into the bucket reaches the audit queue as an S3 event.
func TestNotificationResourcesOnEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := testenv.Prefix(t)
	sq, s3c := cfg.SQS(), cfg.S3()
	testenv.CleanupQueues(t, sq, prefix)
	qname := prefix + "audit"
	qu, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(qname)})
	if err != nil {
		t.Fatal(err)
	}
	bucket := prefix + "store"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)

	rs := setup.NotificationResources(sq, qname, []setup.EventBucket{{Name: bucket, Client: s3c}})
	sum, err := setup.Apply(ctx, rs, func(r setup.Result) { t.Log(r) })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Created != 2 {
		t.Fatalf("first setup: %d created, want 2 (queue policy, bucket events)", sum.Created)
	}
	rs = setup.NotificationResources(sq, qname, []setup.EventBucket{{Name: bucket, Client: s3c}})
	sum, err = setup.Apply(ctx, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Changed() || sum.Existed != 2 {
		t.Fatalf("second setup changed something: %+v", sum)
	}

	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("space/a.txt"), Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qu.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			recs, err := s3event.Parse([]byte(aws.ToString(m.Body)))
			if err != nil {
				continue // the s3:TestEvent
			}
			for _, r := range recs {
				if r.Bucket == bucket && r.Key == "space/a.txt" && r.Created() {
					return
				}
			}
		}
	}
	t.Fatal("no ObjectCreated event for space/a.txt reached the audit queue")
}
