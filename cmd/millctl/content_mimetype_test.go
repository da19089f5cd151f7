package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/task"
)

// TestPropsSetChangesTheMimetype: content-mimetype is the item's mimetype
// (DuraCloud's name), not a user property: `content props set …
// content-mimetype=X` changes it — through an audited rewrite of the
// item's verified bytes, its user properties kept — and stores no
// property of that name. Other system properties are refused.
func TestPropsSetChangesTheMimetype(t *testing.T) {
	q := withMemAuditQueue(t)
	dir := t.TempDir()
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "demo", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, filepath.Join(dir, "store1")))
	env := map[string]string{"MILL_CONFIG_DIR": dir, "MILL_USER_ID": "carol"}
	file := pcsWrite(t, dir, "hello.txt", "hello")
	if code, _, errOut := pcsRun(t, env, "", "content", "put", "--create-space", "--mimetype", "text/plain", "--prop", "owner=carol",
		"demo", "1", "docs", "hello", file); code != 0 {
		t.Fatalf("put: %s", errOut)
	}
	before := len(auditTasks(t, q))

	code, out, errOut := pcsRun(t, env, "", "content", "props", "set", "demo", "1", "docs", "hello", "content-mimetype=text/markdown", "tag=x")
	if code != 0 {
		t.Fatalf("props set: %d %s", code, errOut)
	}
	if !strings.Contains(out, `"mimetype": "text/markdown"`) || strings.Contains(out, `"content-mimetype"`) ||
		!strings.Contains(out, `"owner": "carol"`) || !strings.Contains(out, `"tag": "x"`) {
		t.Fatalf("props set printed:\n%s", out)
	}
	if code, out, _ := pcsRun(t, env, "", "content", "get", "demo", "1", "docs", "hello"); code != 0 || out != "hello" {
		t.Fatalf("content after the change: %q", out)
	}
	tasks := auditTasks(t, q)[before:]
	if len(tasks) != 1 || tasks[0].Get("content-mimetype") != "text/markdown" ||
		tasks[0].Get("content-checksum") != "5d41402abc4b2a76b9719d911017c592" || tasks[0].Get("content-properties") != `{"owner":"carol","tag":"x"}` {
		t.Fatalf("audited %v", tasks)
	}

	// The same mimetype again: a property change only.
	if code, _, errOut := pcsRun(t, env, "", "content", "props", "set", "demo", "1", "docs", "hello", "content-mimetype=text/markdown", "tag=y"); code != 0 {
		t.Fatal(errOut)
	}
	if tasks := auditTasks(t, q)[before+1:]; len(tasks) != 1 || tasks[0].Get("action") != "SET_CONTENT_PROPERTIES" {
		t.Fatalf("audited %v", tasks)
	}

	for _, bad := range [][]string{
		{"content-size=1"}, {"Content-MD5=abc"}, {"content-mimetype="}, {"content-mimetype=not a type"},
		{"content-mimetype=text/plain\u0007"}, {"--delete", "content-mimetype", "tag=z"},
	} {
		args := append([]string{"content", "props", "set", "demo", "1", "docs", "hello"}, bad...)
		if bad[0] == "--delete" {
			args = append([]string{"content", "props", "set", bad[0], bad[1], "demo", "1", "docs", "hello"}, bad[2:]...)
		}
		if code, _, errOut := pcsRun(t, env, "", args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d %s, want a usage error", bad, code, errOut)
		}
	}
	if n := len(auditTasks(t, q)); n != before+2 {
		t.Errorf("refused changes audited: %d tasks", n-before-2)
	}
}

// Against the emulator: the mimetype change of an item of an s3 store is
// its S3 Content-Type, and its AUDIT message, with MILL_WIRE_FORMAT=
// properties, is .properties text on the SQS audit queue.
func TestPropsSetMimetypeS3(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := context.Background()
	s3c, sqsc := cfg.S3(), cfg.SQS()
	prefix := testenv.Prefix(t)
	bucket := prefix + "store"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	testenv.CleanupQueues(t, sqsc, prefix)
	qurl, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "audit")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acct", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "p/", "region": "us-east-1"}]}]}`, bucket))
	env := map[string]string{"MILL_CONFIG_DIR": dir, "MILL_QUEUE_PREFIX": prefix, "MILL_WIRE_FORMAT": "properties",
		"AWS_ENDPOINT_URL": testenv.Endpoint()}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
		env[k] = os.Getenv(k)
	}
	file := pcsWrite(t, dir, "f.txt", "some content")
	if code, _, errOut := pcsRun(t, env, "", "content", "put", "--create-space", "--mimetype", "text/plain", "acct", "1", "docs", "f.txt", file); code != 0 {
		t.Fatalf("content put: %s", errOut)
	}
	if code, _, errOut := pcsRun(t, env, "", "content", "props", "set", "acct", "1", "docs", "f.txt", "content-mimetype=text/csv"); code != 0 {
		t.Fatalf("props set: %s", errOut)
	}
	head, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("p/docs/f.txt")})
	if err != nil || aws.ToString(head.ContentType) != "text/csv" {
		t.Fatalf("S3 Content-Type %q (%v), want text/csv", aws.ToString(head.ContentType), err)
	}
	var bodies []string
	for deadline := time.Now().Add(10 * time.Second); len(bodies) < 3 && time.Now().Before(deadline); {
		out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qurl.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
	}
	found := false
	for _, b := range bodies {
		if !strings.HasPrefix(b, "#") {
			t.Errorf("AUDIT message not in .properties text: %.80q", b)
		}
		if tk, err := task.Decode([]byte(b)); err == nil && tk.Get(task.KeyContentMimetype) == "text/csv" {
			found = true
		}
	}
	if !found {
		t.Errorf("no AUDIT of the change among %q", bodies)
	}
}
