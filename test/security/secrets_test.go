package security

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// canaryRole creates a PostgreSQL login role with password pw owning a
// fresh schema, and returns a database URL that logs in as it (search_path
// set to the schema). Both are dropped when the test ends.
func canaryRole(t *testing.T, base, role, pw string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{role}.Sanitize()
	// DDL takes no parameters; the password is a quoted literal of the
	// test's own making.
	if _, err := conn.Exec(ctx, "create role "+id+" login password '"+strings.ReplaceAll(pw, "'", "''")+"'"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	if _, err := conn.Exec(ctx, "create schema "+id+" authorization "+id); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("cleanup: connect: %v", err)
			return
		}
		defer c.Close(ctx)
		for _, q := range []string{"drop schema " + id + " cascade", "drop owned by " + id, "drop role " + id} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Logf("cleanup: %s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, pw)
	return testenv.WithSearchPath(u.String(), role)
}

// forms returns the ways a secret could be written out: as is, URL-encoded
// (query, path, userinfo) and base64.
func forms(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s), url.UserPassword("u", s).String()[2:],
		base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s))}
	seen := map[string]bool{}
	var uniq []string
	for _, f := range out {
		if !seen[f] {
			seen[f] = true
			uniq = append(uniq, f)
		}
	}
	return uniq
}

func TestMain(m *testing.M) { testbin.Main(m) }

// TestCredentialsNeverLogged runs setup → content put → workman (AUDIT,
// DUP, NOOP, with a failing task) → dlq list → queues through the real
// binaries with canary AWS credentials and a canary database password at
// debug level, and checks that no output and no dead letter holds them.
func TestCredentialsNeverLogged(t *testing.T) {
	cfg := testenv.AWS(t)
	base := testenv.DatabaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	u := testenv.Unique()
	accessKey := "AKIACANARY" + strings.ToUpper(u)
	secret := "canarySecret" + u + "+/Zq9"
	role := "canary_" + u
	password := "canaryPw" + u + "/+@:?&Z"
	dbURL := canaryRole(t, base, role, password)
	secrets := map[string]string{"access key id": accessKey, "secret access key": secret, "database password": password}

	bins := testbin.Build(t, "millctl", "workman")
	millctl, workman := bins["millctl"], bins["workman"]

	prefix := testenv.Prefix(t)
	sqsc, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sqsc, prefix)
	names := map[string]string{"MILL_CONFIG_BUCKET": prefix + "config", "MILL_STATE_BUCKET": prefix + "state", "MILL_CLAIMS_BUCKET": prefix + "state",
		"MILL_REPORTS_BUCKET": prefix + "reports", "MILL_AUDIT_TABLE": prefix + "audit-log", "MILL_LEASE_TABLE": prefix + "leases",
		"MILL_FLEET_TABLE": prefix + "fleet"}
	storeBucket := prefix + "store"
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"], storeBucket} {
		testenv.CleanupBucket(t, s3c, b)
	}
	testenv.CleanupTable(t, ddb, names["MILL_AUDIT_TABLE"])
	testenv.CleanupTable(t, ddb, names["MILL_LEASE_TABLE"])
	testenv.CleanupTable(t, ddb, names["MILL_FLEET_TABLE"])
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(storeBucket)}); err != nil {
		t.Fatal(err)
	}

	conf := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "one/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "two/", "region": "us-east-1"}]}]}`, storeBucket, storeBucket))
	write("duplication-accounts.json", `["acme"]`)
	write("acme-duplication-policy.json", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)

	// The children's environment: the canaries replace every credential.
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MILL_") || strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "PG") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_ENDPOINT_URL="+testenv.Endpoint(), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secret,
		"MILL_DATABASE_URL="+dbURL, "MILL_LOG_LEVEL=debug", "MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+conf)
	for k, v := range names {
		env = append(env, k+"="+v)
	}

	var outputs []string // every captured stdout/stderr, labelled
	runCmd := func(bin string, args ...string) string {
		t.Helper()
		c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
		err, out, errOut := c.Err(), c.Stdout(), c.Stderr()
		label := filepath.Base(bin) + " " + strings.Join(args, " ")
		outputs = append(outputs, label+" stdout:\n"+out, label+" stderr:\n"+errOut)
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", label, err, out, errOut)
		}
		return out
	}

	runCmd(millctl, "setup")
	dir := t.TempDir()
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(f, []byte(fmt.Sprintf("item %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		runCmd(millctl, "content", "put", "--create-space", "acme", "1", "docs", fmt.Sprintf("dir/item-%d.txt", i), f)
	}
	// A DUP task naming an unregistered store: it fails, and with
	// --max-attempts 1 goes to the dead letter on its first failure.
	bad, err := task.Encode(task.Dup{Account: "acme", StoreID: "9", DestStoreID: "2", SpaceID: "docs", ContentID: "x"}.Task(), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	hi, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, queue.KeyDupHigh))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: hi.QueueUrl, MessageBody: aws.String(string(bad))}); err != nil {
		t.Fatal(err)
	}

	// An S3 event for a space marker: ignored, with a debug line, so the
	// run is known to log at debug level.
	auditURL, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, queue.KeyAudit))})
	if err != nil {
		t.Fatal(err)
	}
	event := `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2024-01-02T03:04:05.000Z",` +
		`"eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"` + storeBucket + `"},` +
		`"object":{"key":"one/docs","size":0,"eTag":"d41d8cd98f00b204e9800998ecf8427e","sequencer":"01"}}}]}`
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: auditURL.QueueUrl, MessageBody: aws.String(event)}); err != nil {
		t.Fatal(err)
	}

	w := testbin.Start(t, testbin.Spec{Path: workman, Args: []string{"--task-types", "AUDIT,DUP,NOOP", "--queues", "audit,dup-high",
		"--http-addr", "", "--cloudwatch=false", "--max-attempts", "1", "--receive-wait", "1s",
		"--queue-backoff-min", "1s", "--queue-backoff-max", "2s", "--long-poll-wait", "1s",
		"--grace-period", "5s"}, Env: env})

	// Drained: 3 items copied to store 2 (each AUDIT makes a DUP, each DUP
	// copy another AUDIT) and the bad task dead-lettered.
	dlqURL, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, queue.KeyDeadLetter))})
	if err != nil {
		t.Fatal(err)
	}
	depth := func(u *string) int {
		n, err := testenv.QueueDepth(ctx, sqsc, aws.ToString(u))
		if err != nil {
			return -1
		}
		return n
	}
	copied := func() int {
		o, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(storeBucket), Prefix: aws.String("two/docs/dir/")})
		if err != nil {
			return 0
		}
		return len(o.Contents)
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if copied() == 3 && depth(dlqURL.QueueUrl) == 1 && depth(auditURL.QueueUrl) == 0 && depth(hi.QueueUrl) == 0 {
			break
		}
		if w.Exited() {
			t.Fatalf("workman exited early:\n%s", w.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues did not drain: %d copied, dead-letter %d, audit %d, dup-high %d\nworkman:\n%s",
				copied(), depth(dlqURL.QueueUrl), depth(auditURL.QueueUrl), depth(hi.QueueUrl), w.Output())
		}
	}
	_ = w.Stop()
	outputs = append(outputs, "workman output:\n"+w.Output())

	list := runCmd(millctl, "dlq", "list", "--width", "0")
	if !strings.Contains(list, `policy: no-store-policy`) {
		t.Errorf("dlq list does not show the failed task's error:\n%s", list)
	}
	runCmd(millctl, "queues", "--no-age")
	// A database that refuses the connection: the error path must not
	// print the URL's password either.
	refused, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	refused.Host = "127.0.0.1:1"
	c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: millctl, Args: []string{"migrate", "status", "--database-url", refused.String()}, Env: env})
	out := c.Output()
	if c.Err() == nil {
		t.Errorf("migrate status against a closed port succeeded:\n%s", out)
	}
	outputs = append(outputs, "millctl migrate status (refused) output:\n"+out)

	// The dead letters themselves, body and attributes.
	o, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlqURL.QueueUrl, MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Messages) != 1 {
		t.Errorf("%d dead letters, want 1", len(o.Messages))
	}
	for _, m := range o.Messages {
		s := "dead letter " + aws.ToString(m.MessageId) + ":\n" + aws.ToString(m.Body)
		for k, v := range m.MessageAttributes {
			s += "\n" + k + "=" + aws.ToString(v.StringValue)
		}
		outputs = append(outputs, s)
	}

	// The run must have logged at debug level, or the check proves little.
	if !strings.Contains(w.Output(), `"level":"DEBUG"`) {
		t.Errorf("workman logged nothing at debug level:\n%s", w.Output())
	}
	total := 0
	for _, out := range outputs {
		total += len(out)
		for what, s := range secrets {
			for _, f := range forms(s) {
				if i := strings.Index(out, f); i >= 0 {
					lo, hi := max(0, i-150), min(len(out), i+len(f)+50)
					t.Errorf("LEAK: the %s (as %q) appears in %s … %s …", what, f, strings.SplitN(out, "\n", 2)[0], out[lo:hi])
				}
			}
		}
	}
	t.Logf("checked %d outputs (%d bytes) for %d canaries in their encoded forms", len(outputs), total, len(secrets))
}
