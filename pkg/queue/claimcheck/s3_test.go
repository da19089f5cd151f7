package claimcheck_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	setupq "github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// emulator creates a bucket and an SQS queue on the local emulator, both
// removed when the test ends.
func emulator(ctx context.Context, t *testing.T) (*s3.Client, string, *sqsqueue.Queue) {
	t.Helper()
	cfg := testenv.AWS(t)
	prefix := testenv.Prefix(t)
	sc, s3c := cfg.SQS(), cfg.S3()
	testenv.CleanupQueues(t, sc, prefix)
	bucket := prefix + "claims"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	if _, err := (setupq.Queue{Client: sc, QueueName: prefix + "q", VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	inner, err := sqsqueue.Open(ctx, sc, prefix+"q", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s3c, bucket, inner
}

// A 1 MiB body through SQS and S3 on the local emulator.
func TestClaimCheckOverSQSAndS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	s3c, bucket, inner := emulator(ctx, t)
	blobs := s3blob.New(s3c, bucket, "mill/", nil)
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
	// The blob stays until the claims expiry (see claimcheck.Queue.Delete).
	if _, err := blobs.Get(ctx, key); err != nil {
		t.Fatalf("blob after its message was deleted: %v, want it kept", err)
	}
	if err := blobs.Delete(ctx, key); err != nil {
		t.Fatalf("deleting a blob: %v", err)
	}
	if _, err := blobs.Get(ctx, key); !errors.Is(err, claimcheck.ErrBlobNotFound) {
		t.Fatalf("blob after Delete: %v, want ErrBlobNotFound", err)
	}
	if err := blobs.Delete(ctx, key); err != nil {
		t.Fatalf("deleting a missing blob: %v", err)
	}
}

// A forged reference to another object of the claims bucket — the
// producers' state files live there — is refused over SQS and S3: the
// object is not read into the message, and deleting the message leaves it
// byte for byte as it was. Before the claim check confined its keys, the
// state file was read and then deleted with the message.
func TestForgedReferenceLeavesBucketAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	s3c, bucket, inner := emulator(ctx, t)
	state := []byte(`{"producer":"dup","cursor":"acme/photos/img-0042.jpg"}`)
	const stateKey = "state/dupproducer.json"
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(stateKey), Body: bytes.NewReader(state)}); err != nil {
		t.Fatal(err)
	}
	q := claimcheck.New(inner, s3blob.New(s3c, bucket, "", nil), claimcheck.Config{KeyPrefix: "claims/"})
	sum := sha256.Sum256(state)
	for _, key := range []string{stateKey, "claims/../" + stateKey} {
		body := fmt.Sprintf(`{"millClaimCheck":{"key":%q,"size":%d,"sha256":"%x"}}`, key, len(state), sum)
		if err := inner.Send(ctx, queue.SendEntry{Body: []byte(body), Attributes: map[string]string{claimcheck.AttrRef: key}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []*queue.Message
	for len(got) < 2 && ctx.Err() == nil {
		ms, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ms...)
	}
	if len(got) != 2 {
		t.Fatalf("received %d messages, want 2", len(got))
	}
	for _, m := range got {
		if err := claimcheck.Unresolved(m); !errors.Is(err, claimcheck.ErrRefused) {
			t.Errorf("reference %q: Unresolved = %v, want ErrRefused", m.Attributes[claimcheck.AttrRef], err)
		}
		if bytes.Equal(m.Body, state) {
			t.Errorf("reference %q was resolved to the state file", m.Attributes[claimcheck.AttrRef])
		}
	}
	if err := q.Delete(ctx, got...); err != nil {
		t.Fatal(err)
	}
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(stateKey)})
	if err != nil {
		t.Fatalf("the state file after the forged messages: %v", err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); !bytes.Equal(b, state) {
		t.Fatalf("state file changed: %q", b)
	}
}
