package badinput

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
)

// snapshot lists a bucket's keys with their ETags and a directory's files
// with their contents: what a refused command must leave as it was.
func snapshot(t *testing.T, ctx context.Context, s3c *s3.Client, bucket, dir string) string {
	t.Helper()
	var lines []string
	o, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list %s: %v", bucket, err)
	}
	for _, x := range o.Contents {
		lines = append(lines, "s3://"+bucket+"/"+aws.ToString(x.Key)+" "+aws.ToString(x.ETag))
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %x", p, b))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestInvalidConfigThroughTheCommands gives millctl, bitproducer and
// workman invalid configuration files: each names the file and position,
// exits non-zero, and writes nothing (config bucket, config directory,
// state and queues as they were).
func TestInvalidConfigThroughTheCommands(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl", "workman", "bitproducer")
	prefix := testenv.Prefix(t)
	s3c, sqsc := cfg.S3(), cfg.SQS()
	bucket := prefix + "config"
	testenv.CleanupBucket(t, s3c, bucket)
	testenv.CleanupQueues(t, sqsc, prefix)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	conf := filepath.Join(dir, "conf") // a valid config directory
	bad := filepath.Join(dir, "bad")   // the invalid inputs
	must(t, os.MkdirAll(conf, 0o755))
	must(t, os.MkdirAll(bad, 0o755))
	write := func(d, name, body string) string {
		p := filepath.Join(d, name)
		must(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	registry := `{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": "/nonexistent/1"},
  {"id": "2", "kind": "fs", "root": "/nonexistent/2"}]}]}`
	goodPolicy := `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`
	write(conf, "accounts.json", registry)
	write(conf, "duplication-accounts.json", `["acme"]`)
	write(conf, "acme-duplication-policy.json", goodPolicy)
	for name, body := range map[string]string{"accounts.json": registry, "duplication-accounts.json": `["acme"]`, "acme-duplication-policy.json": goodPolicy} {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(name), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}

	sample, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(t), "testdata", "policies", "invalid", "account1-duplication-policy.json"))
	must(t, err)
	trailing := write(bad, "acme-duplication-policy.json", string(sample)) // DuraCloud's sample: trailing comma, line 5
	badStoreDir := filepath.Join(bad, "store")
	must(t, os.MkdirAll(badStoreDir, 0o755))
	badStore := write(badStoreDir, "acme-duplication-policy.json", "{\"defaultPolicies\": [\n  {\"srcStoreId\": \"1\", \"destStoreId\": \"9\"}]}")
	unknownAcct := write(bad, "nobody-duplication-policy.json", goodPolicy)
	credential := write(bad, "credential.json", `{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": "b", "region": "us-east-1",
   "secretAccessKey": "not-a-real-secret"}]}]}`)
	twoPrimary := write(bad, "two-primary.json", `{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": "/nonexistent/1"},
  {"id": "2", "primary": true, "kind": "fs", "root": "/nonexistent/2"}]}]}`)
	filter := write(bad, "include.txt", "# spaces to check\n/acme/1/docs\nacme/1/photos\n")
	wmConf := filepath.Join(bad, "workman")
	must(t, os.MkdirAll(wmConf, 0o755))
	wmAccounts := write(wmConf, "accounts.json", "{\"accounts\": [\n  {\"id\": \"acme\", \"status\": \"active\",}\n]}")
	write(wmConf, "duplication-accounts.json", `["acme"]`)
	state := filepath.Join(dir, "state.json")

	// workman opens its queues first: they exist (empty), so the registry
	// is what it refuses.
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: sqsc, QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	queuesBefore := queueState(t, ctx, sqsc, prefix)

	env := append(os.Environ(), "MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_BUCKET="+bucket)
	cases := []struct {
		name string
		bin  string
		args []string
		code int
		want []string // substrings of stderr: file and position, and the reason
	}{
		{"policy validate: DuraCloud sample's trailing comma", "millctl", []string{"policy", "validate", trailing},
			1, []string{trailing + ":5:45:", "trailing comma before ']'"}},
		{"policy validate: a store id not registered", "millctl", []string{"policy", "validate", "--registry", filepath.Join(conf, "accounts.json"), badStore},
			1, []string{badStore + ":2:", `store "9" is not a registered store`}},
		{"policy validate: an account not in the registry", "millctl", []string{"policy", "validate", "--registry", filepath.Join(conf, "accounts.json"), unknownAcct},
			1, []string{unknownAcct + ": ", `account "nobody" is not in the registry`}},
		{"policy put (bucket): DuraCloud sample's trailing comma", "millctl", []string{"policy", "put", "acme", trailing},
			1, []string{trailing + ":5:45:", "trailing comma before ']'"}},
		{"policy put (bucket): a store id not registered", "millctl", []string{"policy", "put", "acme", badStore},
			1, []string{badStore + ":2:", `store "9" is not a registered store`}},
		{"policy put (directory): a store id not registered", "millctl", []string{"policy", "put", "--config-dir", conf, "acme", badStore},
			1, []string{badStore + ":2:", `store "9" is not a registered store`}},
		{"policy put: missing FILE", "millctl", []string{"policy", "put", "acme"}, 2, []string{"want ACCOUNT FILE"}},
		{"stores validate: a credential-like key", "millctl", []string{"stores", "validate", credential},
			1, []string{credential + ":3:4:", `"secretAccessKey" looks like a credential`}},
		{"stores validate: two primary stores", "millctl", []string{"stores", "validate", twoPrimary},
			1, []string{twoPrimary + ":3:3:", "more than one primary store"}},
		// A filter file is named by a flag and refused before any work,
		// like a bad flag value: bitproducer's usage status.
		{"bitproducer --include: a pattern without its leading /", "bitproducer",
			[]string{"--include", filter, "--config-dir", conf, "--state", state},
			2, []string{filter + ":3:", `"acme/1/photos"`}},
		{"workman --config-dir: invalid accounts.json", "workman",
			[]string{"--config-dir", wmConf, "--task-types", "DUP", "--queues", "dup-high", "--http-addr", "", "--cloudwatch=false", "--fleet-table", "",
				"--database-url", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"},
			1, []string{wmAccounts + ":2:36:", "trailing comma before '}'"}},
	}
	before := snapshot(t, ctx, s3c, bucket, dir)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bins[c.bin], Args: c.args, Env: env})
			stdout, stderr := cmd.Stdout(), cmd.Stderr()
			if got := cmd.ExitCode(); got != c.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", got, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if s := stdout; strings.Contains(s, "stored") || strings.Contains(s, ": ok") {
				t.Errorf("stdout reports success: %s", s)
			}
			if after := snapshot(t, ctx, s3c, bucket, dir); after != before {
				t.Errorf("config bucket or files changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			t.Logf("exit %d: %s", cmd.ExitCode(), strings.TrimSpace(stderr))
		})
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("bitproducer wrote its state file (%v)", err)
	}
	if after := queueState(t, ctx, sqsc, prefix); after != queuesBefore {
		t.Errorf("queues changed:\nbefore:\n%s\nafter:\n%s", queuesBefore, after)
	}
}

// queueState lists the queues under prefix with their message counts.
func queueState(t *testing.T, ctx context.Context, c *sqs.Client, prefix string) string {
	t.Helper()
	o, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, u := range o.QueueUrls {
		a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s/%s/%s", u, a.Attributes["ApproximateNumberOfMessages"],
			a.Attributes["ApproximateNumberOfMessagesNotVisible"], a.Attributes["ApproximateNumberOfMessagesDelayed"]))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
