package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
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
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
)

// withMemAuditQueue makes the content commands send AUDIT tasks to an
// in-memory queue for the rest of the test.
func withMemAuditQueue(t *testing.T) *memqueue.Queue {
	t.Helper()
	q := memqueue.New("mill-audit", memqueue.Config{})
	old := openAuditQueue
	openAuditQueue = func(_ context.Context, _ *app, name string, _ *wiring.Claims) (queue.Queue, error) {
		if name != "mill-audit" {
			return nil, fmt.Errorf("unexpected audit queue %q", name)
		}
		return q, nil
	}
	t.Cleanup(func() { openAuditQueue = old })
	return q
}

func auditTasks(t *testing.T, q *memqueue.Queue) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

func TestContentCommandsOnFSStore(t *testing.T) {
	q := withMemAuditQueue(t)
	dir := t.TempDir()
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "demo", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, filepath.Join(dir, "store1")))
	env := map[string]string{"MILL_CONFIG_DIR": dir, "MILL_USER_ID": "carol"}
	file := pcsWrite(t, dir, "hello.txt", "hello")

	code, out, errOut := pcsRun(t, env, "", "content", "put", "--create-space", "--mimetype", "text/plain", "--prop", "owner=carol", "--prop", "k=v=w",
		"demo", "1", "docs", "a/hello.txt", file)
	if code != 0 {
		t.Fatalf("put: exit %d\n%s", code, errOut)
	}
	if out != "stored docs/a/hello.txt: 5 bytes, md5 5d41402abc4b2a76b9719d911017c592\n" {
		t.Fatalf("put: %q", out)
	}
	tasks := auditTasks(t, q)
	if len(tasks) != 2 || tasks[0].Get("action") != "CREATE_SPACE" || tasks[1].Get("action") != "ADD_CONTENT" {
		t.Fatalf("tasks %v", tasks)
	}
	add := tasks[1]
	for k, v := range map[string]string{"account": "demo", "storeId": "1", "spaceId": "docs", "contentId": "a/hello.txt",
		"user-id": "carol", "store-type": "fs", "content-checksum": "5d41402abc4b2a76b9719d911017c592", "content-size": "5",
		"content-mimetype": "text/plain", "content-properties": `{"k":"v=w","owner":"carol"}`} {
		if add.Get(k) != v {
			t.Errorf("ADD_CONTENT %s = %q, want %q", k, add.Get(k), v)
		}
	}

	// Reads emit nothing.
	if code, out, errOut := pcsRun(t, env, "", "content", "get", "demo", "1", "docs", "a/hello.txt"); code != 0 || out != "hello" {
		t.Fatalf("get: %d %q %s", code, out, errOut)
	}
	outFile := filepath.Join(dir, "out.txt")
	if code, _, errOut := pcsRun(t, env, "", "content", "get", "--out", outFile, "demo", "1", "docs", "a/hello.txt"); code != 0 {
		t.Fatal(errOut)
	}
	if b, _ := os.ReadFile(outFile); string(b) != "hello" {
		t.Fatalf("--out wrote %q", b)
	}
	for _, id := range []string{"b", "c", "d"} {
		if code, _, errOut := pcsRun(t, env, "x", "content", "put", "demo", "1", "docs", id, "-"); code != 0 {
			t.Fatal(errOut)
		}
	}
	code, out, errOut = pcsRun(t, env, "", "content", "ls", "--limit", "2", "demo", "1", "docs")
	if code != 0 || out != "a/hello.txt\nb\n" || !strings.Contains(errOut, `--after "b"`) {
		t.Fatalf("ls: %d %q %q", code, out, errOut)
	}
	if _, out, _ := pcsRun(t, env, "", "content", "ls", "--after", "b", "demo", "1", "docs"); out != "c\nd\n" {
		t.Fatalf("ls --after: %q", out)
	}
	if _, out, _ := pcsRun(t, env, "", "content", "ls", "demo", "1"); out != "docs\n" {
		t.Fatalf("ls spaces: %q", out)
	}
	code, out, _ = pcsRun(t, env, "", "content", "props", "demo", "1", "docs", "a/hello.txt")
	if code != 0 || !strings.Contains(out, `"owner": "carol"`) || !strings.Contains(out, `"mimetype": "text/plain"`) {
		t.Fatalf("props: %s", out)
	}
	before := len(auditTasks(t, q))
	if before != 5 {
		t.Fatalf("%d tasks after reads, want 5", before)
	}

	code, out, errOut = pcsRun(t, env, "", "content", "props", "set", "--delete", "k", "demo", "1", "docs", "a/hello.txt", "tag=x")
	if code != 0 || !strings.Contains(out, `"tag": "x"`) || strings.Contains(out, `"k"`) {
		t.Fatalf("props set: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := pcsRun(t, env, "", "content", "rm", "demo", "1", "docs", "a/hello.txt"); code != 0 || out != "deleted docs/a/hello.txt\n" {
		t.Fatalf("rm: %d %s %s", code, out, errOut)
	}
	tasks = auditTasks(t, q)[before:]
	if len(tasks) != 2 || tasks[0].Get("action") != "SET_CONTENT_PROPERTIES" || tasks[0].Get("content-properties") != `{"owner":"carol","tag":"x"}` ||
		tasks[1].Get("action") != "DELETE_CONTENT" || tasks[1].Get("content-checksum") != "5d41402abc4b2a76b9719d911017c592" {
		t.Fatalf("tasks %v", tasks)
	}
	if code, _, errOut := pcsRun(t, env, "", "content", "get", "demo", "1", "docs", "a/hello.txt"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("get after rm: %d %s", code, errOut)
	}
	if code, _, errOut := pcsRun(t, env, "", "content", "get", "demo", "7", "docs", "x"); code != 1 || !strings.Contains(errOut, `unknown store "7"`) {
		t.Fatalf("unknown store: %d %s", code, errOut)
	}
}

// Against the emulator: registry and policy in a config bucket, content put
// through an s3 store, and the AUDIT message on the SQS audit queue.
func TestContentPutS3AuditsToSQS(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := context.Background()
	s3c, sqsc := cfg.S3(), cfg.SQS()
	prefix := testenv.Prefix(t)
	configBucket, storeBucket := prefix+"config", prefix+"store"
	for _, b := range []string{configBucket, storeBucket} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
	testenv.CleanupQueues(t, sqsc, prefix)
	qurl, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "audit")})
	if err != nil {
		t.Fatal(err)
	}
	registry := fmt.Sprintf(`{"accounts": [{"id": "acct", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "p/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "replica/", "region": "us-east-1"}]}]}`, storeBucket, storeBucket)
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(configBucket), Key: aws.String("cfg/accounts.json"), Body: strings.NewReader(registry)}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"MILL_CONFIG_BUCKET": configBucket, "MILL_CONFIG_PREFIX": "cfg/", "MILL_QUEUE_PREFIX": prefix,
		"AWS_ENDPOINT_URL": testenv.Endpoint(),
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
		env[k] = os.Getenv(k)
	}

	if code, _, errOut := pcsRun(t, env, "", "stores", "validate"); code != 0 {
		t.Fatalf("stores validate: %s", errOut)
	}
	dir := t.TempDir()
	pol := pcsCopy(t, pcsTestdata+"policies/account1-duplication-policy.json", dir, "p.json")
	// Store "3" of the sample policy is not registered for acct.
	if code, _, errOut := pcsRun(t, env, "", "policy", "put", "acct", pol); code != 1 || !strings.Contains(errOut, `p.json:10:9: store "3" is not a registered store`) {
		t.Fatalf("policy put with unknown store: %d %s", code, errOut)
	}
	pol = pcsWrite(t, dir, "p2.json", `{"spaceDuplicationStorePolicies": {"docs": [{"srcStoreId": "1", "destStoreId": "2"}]}}`)
	if code, _, errOut := pcsRun(t, env, "", "policy", "put", "acct", pol); code != 0 {
		t.Fatalf("policy put: %s", errOut)
	}
	if code, out, _ := pcsRun(t, env, "", "policy", "list"); code != 0 || out != "acct\tdocs: 1->2\n" {
		t.Fatalf("policy list: %q", out)
	}

	file := pcsWrite(t, dir, "f.bin", "some content")
	code, _, errOut := pcsRun(t, env, "", "content", "put", "--create-space", "--mimetype", "application/x-test", "--prop", "a=b",
		"acct", "1", "docs", "dir/f.bin", file)
	if code != 0 {
		t.Fatalf("content put: %s", errOut)
	}
	var got []*task.Task
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qurl.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			tk, err := task.Decode([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tk)
		}
	}
	var add *task.Task
	for _, tk := range got {
		if tk.Get("action") == "ADD_CONTENT" {
			add = tk
		}
	}
	if len(got) != 2 || add == nil {
		t.Fatalf("AUDIT tasks on the queue: %v", got)
	}
	for k, v := range map[string]string{"account": "acct", "storeId": "1", "spaceId": "docs", "contentId": "dir/f.bin", "store-type": "s3",
		"content-checksum": pcsMD5("some content"), "content-size": "12", "content-mimetype": "application/x-test",
		"content-properties": `{"a":"b"}`, "user-id": "millctl"} {
		if add.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, add.Get(k), v)
		}
	}
	if code, out, _ := pcsRun(t, env, "", "content", "get", "acct", "1", "docs", "dir/f.bin"); code != 0 || out != "some content" {
		t.Fatalf("get: %q", out)
	}
	// Deleted from a bucket without versioning: kept under the trash
	// prefix, listed and restored from there.
	if code, _, errOut := pcsRun(t, env, "", "content", "rm", "acct", "1", "docs", "dir/f.bin"); code != 0 {
		t.Fatalf("rm: %s", errOut)
	}
	if code, out, errOut := pcsRun(t, env, "", "content", "versions", "acct", "1", "docs", "dir/f.bin"); code != 0 || !strings.Contains(out, "trash:") || !strings.Contains(out, "deleted") {
		t.Fatalf("versions: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := pcsRun(t, env, "", "content", "restore", "acct", "1", "docs", "dir/f.bin"); code != 0 {
		t.Fatalf("restore: %s", errOut)
	}
	if code, out, _ := pcsRun(t, env, "", "content", "get", "acct", "1", "docs", "dir/f.bin"); code != 0 || out != "some content" {
		t.Fatalf("get after restore: %q", out)
	}
}

func pcsMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestContentRestore: content versions lists what a store keeps of an
// item; content restore brings back the newest by default or the one
// named, through the audited provider, re-creating the space on request.
func TestContentRestore(t *testing.T) {
	q := withMemAuditQueue(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "store1")
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "demo", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, root))
	env := map[string]string{"MILL_CONFIG_DIR": dir, "MILL_USER_ID": "carol"}
	run := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := pcsRun(t, env, stdin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	run("one", "content", "put", "--create-space", "--mimetype", "text/plain", "demo", "1", "docs", "a/b.txt", "-")
	run("two!", "content", "put", "--mimetype", "text/plain", "demo", "1", "docs", "a/b.txt", "-")
	run("", "content", "rm", "demo", "1", "docs", "a/b.txt")

	out := run("", "content", "versions", "demo", "1", "docs", "a/b.txt")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "VERSION") || !strings.Contains(lines[1], "deleted") || !strings.Contains(lines[1], pcsMD5("two!")) ||
		!strings.Contains(lines[2], "overwritten") || !strings.Contains(lines[2], pcsMD5("one")) {
		t.Fatalf("versions:\n%s", out)
	}
	oldest := strings.Fields(lines[2])[0]

	before := len(auditTasks(t, q))
	out = run("", "content", "restore", "demo", "1", "docs", "a/b.txt")
	if !strings.Contains(out, "restored docs/a/b.txt") || !strings.Contains(out, pcsMD5("two!")) {
		t.Fatalf("restore: %q", out)
	}
	if got := run("", "content", "get", "demo", "1", "docs", "a/b.txt"); got != "two!" {
		t.Fatalf("after restoring the newest: %q", got)
	}
	run("", "content", "restore", "--version-id", oldest, "demo", "1", "docs", "a/b.txt")
	if got := run("", "content", "get", "demo", "1", "docs", "a/b.txt"); got != "one" {
		t.Fatalf("after restoring %s: %q", oldest, got)
	}
	tasks := auditTasks(t, q)[before:]
	if len(tasks) != 2 {
		t.Fatalf("restore tasks: %v", tasks)
	}
	for i, want := range []string{pcsMD5("two!"), pcsMD5("one")} {
		tk := tasks[i]
		if tk.Get("action") != "COPY_CONTENT" || tk.Get("source-space-id") != "docs" || tk.Get("source-content-id") != "a/b.txt" ||
			tk.Get("content-checksum") != want || tk.Get("restored-version") == "" || tk.Get("user-id") != "carol" {
			t.Errorf("restore task %d: %v", i, tk.Props)
		}
	}
	if tasks[1].Get("restored-version") != oldest {
		t.Errorf("restored-version %q, want %q", tasks[1].Get("restored-version"), oldest)
	}

	// Unknown versions and items are refused; an item with none says so.
	if code, _, errOut := pcsRun(t, env, "", "content", "restore", "--version-id", "nope", "demo", "1", "docs", "a/b.txt"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("restore of an unknown version: %d %s", code, errOut)
	}
	if code, out, errOut := pcsRun(t, env, "", "content", "versions", "demo", "1", "docs", "never"); code != 0 || out != "" || !strings.Contains(errOut, "no recoverable version") {
		t.Fatalf("versions of an item with none: %d %q %q", code, out, errOut)
	}

	// The space itself is gone: --create-space re-creates it first.
	run("", "content", "rm", "demo", "1", "docs", "a/b.txt")
	if err := os.RemoveAll(filepath.Join(root, "docs")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := pcsRun(t, env, "", "content", "restore", "demo", "1", "docs", "a/b.txt"); code != 1 || !strings.Contains(errOut, "--create-space") {
		t.Fatalf("restore into a missing space: %d %s", code, errOut)
	}
	run("", "content", "restore", "--create-space", "demo", "1", "docs", "a/b.txt")
	if got := run("", "content", "get", "demo", "1", "docs", "a/b.txt"); got != "one" {
		t.Fatalf("after restoring into a re-created space: %q", got)
	}
}
