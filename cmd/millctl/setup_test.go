package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

// setupRun runs millctl in-process. MILL_* variables come only from env,
// so a developer's own settings cannot leak into the test; the AWS ones
// come from the process (localstack/env.sh).
func setupRun(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), logger: slogtest.New(t, slog.LevelInfo),
		getenv: func(k string) string {
			if strings.HasPrefix(k, "MILL_") {
				return env[k]
			}
			return os.Getenv(k)
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, a, args)
	t.Logf("millctl %s → %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// names of one test's resources, all under a unique prefix.
type setupNames struct {
	prefix, config, state, reports, audit, leases, fleet, dbURL string
}

func newSetupNames(t *testing.T, dbURL string) setupNames {
	p := testenv.Prefix(t)
	return setupNames{prefix: p, config: p + "config", state: p + "state", reports: p + "reports",
		audit: p + "audit-log", leases: p + "leases", fleet: p + "fleet", dbURL: dbURL}
}

func (n setupNames) args(extra ...string) []string {
	return append([]string{"setup", "--queue-prefix", n.prefix,
		"--config-bucket", n.config, "--state-bucket", n.state, "--reports-bucket", n.reports, "--claims-bucket", n.state,
		"--audit-table", n.audit, "--lease-table", n.leases, "--fleet-table", n.fleet, "--database-url", n.dbURL}, extra...)
}

func (n setupNames) cleanup(t *testing.T, sq *sqs.Client, s3c *s3.Client, ddb *dynamodb.Client) {
	testenv.CleanupQueues(t, sq, n.prefix)
	for _, b := range []string{n.config, n.state, n.reports} {
		testenv.CleanupBucket(t, s3c, b)
	}
	testenv.CleanupTable(t, ddb, n.audit)
	testenv.CleanupTable(t, ddb, n.leases)
	testenv.CleanupTable(t, ddb, n.fleet)
}

func countStatus(out string, status setup.Status) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.Contains(line, " "+string(status)) && !strings.HasPrefix(line, "setup") && !strings.HasPrefix(line, " ") {
			n++
		}
	}
	return n
}

func TestSetupTwiceThenRepairDrift(t *testing.T) {
	cfg := testenv.AWS(t)
	n := newSetupNames(t, testenv.Schema(t))
	sq, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	n.cleanup(t, sq, s3c, ddb)
	ctx := context.Background()

	start := time.Now()
	code, out, _ := setupRun(t, nil, n.args()...)
	if code != 0 {
		t.Fatalf("first setup exited %d", code)
	}
	t.Logf("first setup took %v", time.Since(start))
	if got := countStatus(out, setup.StatusCreated); got != 14 {
		t.Errorf("first run: %d resources created, want 14 (7 queues, 3 buckets, 3 tables, database)", got)
	}
	if !strings.Contains(out, "setup: 14 created, 0 updated, 0 already existed\n") {
		t.Errorf("first run summary missing")
	}

	// Queues: redrive to the dead-letter queue after 10 receives, SSE,
	// retention longer on the dead-letter queue.
	url := func(key string) string {
		o, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(n.prefix, key))})
		if err != nil {
			t.Fatalf("queue %s: %v", key, err)
		}
		return aws.ToString(o.QueueUrl)
	}
	attrs := func(key string) map[string]string {
		o, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url(key)),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		return o.Attributes
	}
	dlq := attrs(queue.KeyDeadLetter)
	if dlq["MessageRetentionPeriod"] != "1209600" || dlq["RedrivePolicy"] != "" || dlq["VisibilityTimeout"] != "300" {
		t.Errorf("dead-letter queue attributes: %v", dlq)
	}
	for _, key := range queue.DefaultPriority {
		a := attrs(key)
		rp, err := setup.ParseRedrivePolicy(a["RedrivePolicy"])
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if rp.DeadLetterTargetArn != dlq["QueueArn"] || rp.MaxReceiveCount != 10 {
			t.Errorf("%s redrive policy = %+v, want %s after 10", key, rp, dlq["QueueArn"])
		}
		if a["MessageRetentionPeriod"] != "345600" || a["VisibilityTimeout"] != "300" || a["SqsManagedSseEnabled"] != "true" {
			t.Errorf("%s attributes: %v", key, a)
		}
	}
	// Buckets: versioning, encryption, public access blocked.
	for _, b := range []string{n.config, n.state, n.reports} {
		v, err := s3c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b)})
		if err != nil || v.Status != s3types.BucketVersioningStatusEnabled {
			t.Errorf("bucket %s versioning: %v %v", b, v, err)
		}
		if _, err := s3c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String(b)}); err != nil {
			t.Errorf("bucket %s encryption: %v", b, err)
		}
		p, err := s3c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String(b)})
		if err != nil || !aws.ToBool(p.PublicAccessBlockConfiguration.BlockPublicPolicy) {
			t.Errorf("bucket %s public access block: %v", b, err)
		}
	}
	// The claim check's blobs in the state bucket expire a day after the
	// dead-letter retention (14 d), their noncurrent versions after a day.
	// The transfers' checkpoints expire a day after S3 aborts their
	// uploads. Noncurrent versions of every object (the producers' state)
	// expire after setup.StateNoncurrentDays, and lone delete markers go.
	lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(n.state)})
	if err != nil || len(lc.Rules) != 3 {
		t.Errorf("state bucket lifecycle: %+v %v, want the claim-check, checkpoint and state-version rules", lc, err)
	} else if r := lc.Rules[2]; aws.ToString(r.ID) != "mill-state-versions" || r.Filter == nil || aws.ToString(r.Filter.Prefix) != "" ||
		r.NoncurrentVersionExpiration == nil || aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) != setup.StateNoncurrentDays ||
		r.Expiration == nil || !aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) || aws.ToInt32(r.Expiration.Days) != 0 {
		t.Errorf("state-version lifecycle rule: %+v", r)
	} else if r := lc.Rules[1]; aws.ToString(r.ID) != "mill-transfer-checkpoints" || aws.ToString(r.Filter.Prefix) != setup.CheckpointPrefix ||
		r.Expiration == nil || aws.ToInt32(r.Expiration.Days) != setup.DefaultAbortUploadsDays+1 {
		t.Errorf("checkpoint lifecycle rule: %+v", r)
	} else if r := lc.Rules[0]; aws.ToString(r.ID) != "mill-claim-check" || r.Filter == nil || aws.ToString(r.Filter.Prefix) != "claims/" ||
		r.Expiration == nil || aws.ToInt32(r.Expiration.Days) != 15 || r.NoncurrentVersionExpiration == nil ||
		aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) != 1 || r.Status != s3types.ExpirationStatusEnabled {
		t.Errorf("claim-check lifecycle rule: %+v", r)
	}
	// Tables: active, on-demand, the audit log's index, the leases' and
	// the fleet's TTL.
	for _, tb := range []string{n.audit, n.leases, n.fleet} {
		d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Table.TableStatus != ddbtypes.TableStatusActive || d.Table.BillingModeSummary == nil ||
			d.Table.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
			t.Errorf("table %s: status %s billing %+v", tb, d.Table.TableStatus, d.Table.BillingModeSummary)
		}
		if tb == n.audit && (len(d.Table.GlobalSecondaryIndexes) != 1 || aws.ToString(d.Table.GlobalSecondaryIndexes[0].IndexName) != auditlog.IndexSpaceHistory) {
			t.Errorf("audit table indexes: %+v", d.Table.GlobalSecondaryIndexes)
		}
	}
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(n.leases)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled ||
		aws.ToString(ttl.TimeToLiveDescription.AttributeName) != dynamolease.AttrExpiresAt {
		t.Errorf("lease TTL: %+v %v", ttl, err)
	}
	ttl, err = ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(n.fleet)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled ||
		aws.ToString(ttl.TimeToLiveDescription.AttributeName) != dynamofleet.AttrExpiresAt {
		t.Errorf("fleet TTL: %+v %v", ttl, err)
	}
	// Database: every migration applied.
	db, err := milldb.Open(ctx, n.dbURL, milldb.Config{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p, err := milldb.Pending(ctx, db.Pool); err != nil || p != 0 {
		t.Errorf("pending migrations after setup: %d %v", p, err)
	}

	// Second run: nothing to do, and it says so.
	start = time.Now()
	code, out, _ = setupRun(t, nil, n.args()...)
	if code != 0 {
		t.Fatalf("second setup exited %d", code)
	}
	t.Logf("second setup took %v", time.Since(start))
	if got := countStatus(out, setup.StatusExists); got != 14 {
		t.Errorf("second run: %d resources exist, want 14", got)
	}
	if !strings.Contains(out, "setup: 0 created, 14 already existed — nothing to do\n") {
		t.Errorf("second run summary missing")
	}

	// Drift: a weaker redrive policy and suspended versioning are repaired
	// and reported as updated; the rest stays put.
	if _, err := sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url(queue.KeyBit)),
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq["QueueArn"] + `","maxReceiveCount":3}`}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(n.state),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(n.state)}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = setupRun(t, nil, n.args()...)
	if code != 0 {
		t.Fatalf("third setup exited %d", code)
	}
	if !strings.Contains(out, "setup: 0 created, 2 updated, 12 already existed\n") {
		t.Errorf("drift run summary wrong")
	}
	for _, want := range []string{n.prefix + "bit ", "redrive policy", n.state, "versioning", "expiry of claims/ after 15 days", `expiry of noncurrent versions under "" after 7 days`} {
		if !strings.Contains(out, want) {
			t.Errorf("drift run output lacks %q", want)
		}
	}
	if lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(n.state)}); err != nil || len(lc.Rules) != 3 {
		t.Errorf("lifecycle rules not repaired: %+v %v", lc, err)
	}
	if rp, _ := setup.ParseRedrivePolicy(attrs(queue.KeyBit)["RedrivePolicy"]); rp.MaxReceiveCount != 10 {
		t.Errorf("redrive policy not repaired: %+v", rp)
	}
}

func TestSetupDryRunCreatesNothing(t *testing.T) {
	cfg := testenv.AWS(t)
	n := newSetupNames(t, testenv.Schema(t))
	sq, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	n.cleanup(t, sq, s3c, ddb) // in case the test fails by creating something
	ctx := context.Background()

	// Also through the environment: every flag is a MILL_* variable.
	env := map[string]string{"MILL_DRY_RUN": "true", "MILL_LEASE_TABLE": n.leases}
	args := n.args()
	for i, a := range args {
		if a == "--lease-table" {
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	code, out, _ := setupRun(t, env, args...)
	if code != 0 {
		t.Fatalf("dry run exited %d", code)
	}
	if got := countStatus(out, setup.StatusWouldCreate); got != 14 {
		t.Errorf("dry run: %d resources to create, want 14", got)
	}
	if !strings.Contains(out, "setup (dry run): 14 to create, 0 to update, 0 already exist — nothing was changed\n") {
		t.Errorf("dry run summary missing")
	}
	if !strings.Contains(out, n.leases) {
		t.Errorf("MILL_LEASE_TABLE not used")
	}

	qs, err := sq.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(n.prefix)})
	if err != nil || len(qs.QueueUrls) != 0 {
		t.Errorf("dry run created queues: %v %v", qs.QueueUrls, err)
	}
	for _, b := range []string{n.config, n.state, n.reports} {
		if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)}); err == nil {
			t.Errorf("dry run created bucket %s", b)
		}
	}
	for _, tb := range []string{n.audit, n.leases, n.fleet} {
		_, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb)})
		var nf *ddbtypes.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Errorf("dry run: table %s: %v, want not found", tb, err)
		}
	}
	db, err := milldb.Open(ctx, n.dbURL, milldb.Config{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("dry run created %d tables in the schema (%v)", tables, err)
	}
}

func TestSetupUsageErrors(t *testing.T) {
	if code, _, errOut := setupRun(t, nil, "setup", "--skip-db=false"); code != 2 || !strings.Contains(errOut, "--database-url") {
		t.Errorf("no database URL: exit %d, %q", code, errOut)
	}
	if code, _, errOut := setupRun(t, nil, "setup", "--skip-db", "--visibility-timeout", "1.5s"); code != 2 || !strings.Contains(errOut, "visibility timeout") {
		t.Errorf("fractional visibility timeout: exit %d, %q", code, errOut)
	}
	if code, _, _ := setupRun(t, nil, "setup", "--skip-db", "extra"); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
}

// TestSetupStoreBuckets: setup adds the trash expiry rule to every store
// bucket of the registry and notes one without versioning; stores validate
// --buckets reports the same without changing anything; with no registry
// yet, setup says the store buckets were not checked.
func TestSetupStoreBuckets(t *testing.T) {
	cfg := testenv.AWS(t)
	n := newSetupNames(t, "")
	sq, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	n.cleanup(t, sq, s3c, ddb)
	ctx := context.Background()
	store := n.prefix + "store"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(store)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, store)
	dir := t.TempDir()

	code, out, _ := setupRun(t, nil, n.args("--skip-db", "--dry-run", "--config-dir", dir)...)
	if code != 0 || !strings.Contains(out, "store buckets: no store registry yet") {
		t.Fatalf("setup without a registry: exit %d\n%s", code, out)
	}
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acct", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "a/"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "b/"},
  {"id": "3", "kind": "fs", "root": %q}]}]}`, store, store, filepath.Join(dir, "fs")))
	env := map[string]string{"MILL_CONFIG_DIR": dir}

	code, out, _ = setupRun(t, env, "stores", "validate", "--buckets", "--trash-retention", "240h")
	if code != 0 || !strings.Contains(out, "s3://"+store) || !strings.Contains(out, "would update: expiry of a/.mill-trash/ after 10 days") ||
		!strings.Contains(out, "note: not versioned") {
		t.Fatalf("stores validate --buckets: exit %d\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, n.args("--skip-db", "--trash-retention", "240h")...)
	if code != 0 || !strings.Contains(out, "store     s3://"+store) || !strings.Contains(out, ` updated: expiry of a/.mill-trash/ after 10 days; abort of incomplete multipart uploads under "a/" after 7 days; expiry of b/.mill-trash/ after 10 days; abort of incomplete multipart uploads under "b/" after 7 days`) {
		t.Fatalf("setup: exit %d\n%s", code, out)
	}
	lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(store)})
	if err != nil || len(lc.Rules) != 4 {
		t.Fatalf("store bucket lifecycle: %+v, %v", lc, err)
	}
	code, out, _ = setupRun(t, env, "stores", "validate", "--buckets", "--trash-retention", "240h")
	if code != 0 || !strings.Contains(out, "s3://"+store+strings.Repeat(" ", 30-len("s3://"+store))+" exists") {
		t.Fatalf("stores validate --buckets after setup: exit %d\n%s", code, out)
	}
	if code, _, errOut := setupRun(t, env, "stores", "validate", "--buckets", "--trash-retention", "36h"); code != 2 || !strings.Contains(errOut, "whole days") {
		t.Errorf("fractional retention: exit %d %s", code, errOut)
	}
	// A store bucket that does not exist fails the check.
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acct", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q}]}]}`, n.prefix+"absent"))
	if code, out, errOut := setupRun(t, env, "stores", "validate", "--buckets"); code != 1 || !strings.Contains(out, "does not exist") {
		t.Errorf("missing store bucket: exit %d\n%s%s", code, out, errOut)
	}
}
