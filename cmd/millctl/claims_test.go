package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/task"
)

// TestClaimCheckThroughMillctl: tasks over SQS's 256 KiB limit go through
// millctl's commands by claim check — enqueue stores the body in S3 and run
// processes it whole; a big dead letter is shown and redriven whole; a dead
// letter whose blob is gone is not redriven and stays. No blob is deleted
// with its message (the claims expiry removes them).
func TestClaimCheckThroughMillctl(t *testing.T) {
	e := newOpsEnv(t)
	cfg := testenv.AWS(t)
	ctx := context.Background()
	s3c := cfg.S3()
	bucket := e.prefix + "claims"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	claims := &wiring.Claims{Bucket: bucket, Prefix: setup.DefaultClaimsPrefix}
	cc := []string{"--claims-bucket", bucket}
	blobs := func() int {
		t.Helper()
		out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			if !strings.HasPrefix(aws.ToString(o.Key), "claims/") {
				t.Errorf("blob %s outside claims/", aws.ToString(o.Key))
			}
		}
		return len(out.Contents)
	}
	pad := strings.Repeat("p", 300<<10)

	// enqueue → one blob; run processes the task and deletes it.
	out := e.must("", append([]string{"enqueue", "--type", "NOOP", "--queue", "dup-low", "--prop", "id=huge", "--prop", "pad=" + pad}, cc...)...)
	if !strings.Contains(out, "1 sent to "+e.prefix+"dup-low") {
		t.Fatalf("enqueue: %s", out)
	}
	if n := blobs(); n != 1 {
		t.Fatalf("%d blobs after enqueue, want 1", n)
	}
	if code, _, errOut := e.millctl("", "enqueue", "--type", "NOOP", "--queue", "dup-low", "--prop", "pad="+pad, "--claims-bucket", ""); code == 0 ||
		!strings.Contains(errOut, "too large") {
		t.Errorf("enqueue over the limit with the claim check off: exit %d, %s; want a refusal", code, errOut)
	}
	out = e.must("", append([]string{"run", "--queue", "dup-low", "--check", "500ms"}, cc...)...)
	if !strings.Contains(out, "1 done, 0 failed attempts, 0 dead-lettered") {
		t.Fatalf("run: %s", out)
	}
	if n := blobs(); n != 1 {
		t.Errorf("%d blobs after the task was processed, want 1 (kept until the claims expiry)", n)
	}

	// A dead letter over the limit: shown and redriven whole.
	dlq := claims.Wrap(e.queue(queue.KeyDeadLetter), s3c)
	body, err := task.Encode(task.New(task.TypeNoop, map[string]string{"id": "huge-dead", "pad": pad}), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	en, err := deadletter.Encode(&deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: "noop: injected",
		TaskType: task.TypeNoop, SourceQueue: e.prefix + queue.KeyDupLow, Attempts: 3, Worker: "w", Time: time.Now(), MessageID: "src-huge"})
	if err != nil {
		t.Fatal(err)
	}
	if err := dlq.Send(ctx, en); err != nil {
		t.Fatal(err)
	}
	out = e.must("", append(append([]string{"dlq", "show"}, cc...), "src-huge")...)
	if !strings.Contains(out, "noop: injected") || !strings.Contains(out, "huge-dead") || strings.Contains(out, "millClaimCheck") {
		t.Errorf("dlq show of a claim-checked dead letter: %.600s", out)
	}
	testbin.WaitFor(t, 15*time.Second, "the dead letter visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 1 })
	out = e.must("", append([]string{"dlq", "redrive"}, cc...)...)
	if !strings.Contains(out, "redrive: 1 redriven, 0 failed") {
		t.Fatalf("redrive: %s", out)
	}
	src := claims.Wrap(e.queue(queue.KeyDupLow), s3c)
	// An empty receive is not an answer (a loaded emulator may return one
	// before the new message is visible): receive until it comes.
	var ms []*queue.Message
	testbin.WaitFor(t, 15*time.Second, "the redriven task", func() bool {
		got, err := src.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatalf("receive the redriven task: %v", err)
		}
		ms = append(ms, got...)
		return len(ms) > 0
	})
	if len(ms) != 1 {
		t.Fatalf("receive the redriven task: %d messages", len(ms))
	}
	if tk, err := task.Decode(ms[0].Body); err != nil || tk.Get("id") != "huge-dead" || len(tk.Get("pad")) != len(pad) {
		t.Fatalf("redriven task: %v (%d bytes)", err, len(ms[0].Body))
	}
	if err := src.Delete(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	// The task's, the dead letter's and the redriven task's.
	if n := blobs(); n != 3 {
		t.Errorf("%d blobs left after the redrive and the delete, want 3 (kept until the claims expiry)", n)
	}

	// A dead letter whose blob is gone: reported, not redriven, kept.
	before, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if err := dlq.Send(ctx, en); err != nil {
		t.Fatal(err)
	}
	out2, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, o := range out2.Contents {
		if !slices.ContainsFunc(before.Contents, func(b s3types.Object) bool { return aws.ToString(b.Key) == aws.ToString(o.Key) }) {
			if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut := e.millctl("", append([]string{"dlq", "redrive"}, cc...)...)
	if code == 0 || !strings.Contains(out, "0 redriven, 1 failed") || !strings.Contains(errOut, claimcheck.ErrBlobNotFound.Error()) {
		t.Errorf("redrive of a dead letter whose blob is gone: exit %d\n%s\n%s", code, out, errOut)
	}
	testbin.WaitFor(t, 15*time.Second, "the dead letter kept", func() bool { return e.depth(queue.KeyDeadLetter).Total() == 1 })
}

// TestDLQLeavesForeignClaimKeys: a message on the dead-letter queue whose
// claim-check reference names another object of the claims bucket (here a
// producer's state file; the SQS redrive policy moves such a forged task
// there with its attributes) is shown and refused by redrive, and purge
// deletes the message but never the object. Before the claim check
// confined its keys, purge deleted the state file.
func TestDLQLeavesForeignClaimKeys(t *testing.T) {
	e := newOpsEnv(t)
	ctx := context.Background()
	s3c := testenv.AWS(t).S3()
	bucket := e.prefix + "claims"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	const stateKey = "state/bitproducer.json"
	state := `{"producer":"bit","cursor":"acme/photos"}`
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(stateKey), Body: strings.NewReader(state)}); err != nil {
		t.Fatal(err)
	}
	forged := queue.SendEntry{Body: []byte(`{"millClaimCheck":{"key":"` + stateKey + `","size":1,"sha256":"00"}}`),
		Attributes: map[string]string{claimcheck.AttrRef: stateKey}}
	if err := e.queue(queue.KeyDeadLetter).Send(ctx, forged); err != nil {
		t.Fatal(err)
	}
	cc := []string{"--claims-bucket", bucket}
	code, out, errOut := e.millctl("", append([]string{"dlq", "redrive", "--to", "dup-low"}, cc...)...)
	if code == 0 || !strings.Contains(out, "0 redriven, 1 failed") || !strings.Contains(errOut, "claimcheck: key outside claims prefix") {
		t.Errorf("redrive of a forged reference: exit %d\n%s\n%s", code, out, errOut)
	}
	testbin.WaitFor(t, 15*time.Second, "the dead letter visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 1 })
	out = e.must("", append([]string{"dlq", "purge", "--yes", "--error", "not a dead-letter"}, cc...)...)
	if !strings.Contains(out, "purge: 1 deleted, 0 failed") {
		t.Fatalf("purge: %s", out)
	}
	got, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(stateKey)})
	if err != nil {
		t.Fatalf("the state file after redrive and purge: %v", err)
	}
	defer got.Body.Close()
	if b, _ := io.ReadAll(got.Body); string(b) != state {
		t.Fatalf("the state file changed: %q", b)
	}
	if d := e.depth(queue.KeyDupLow); d.Total() != 0 {
		t.Errorf("dup-low after refusing the redrive: %+v", d)
	}
}
