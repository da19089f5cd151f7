package infra

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue"
)

// queueOutputs maps each queue key to the stem of its core.yaml outputs
// (<stem>QueueUrl, <stem>QueueArn, <stem>QueueName).
var queueOutputs = map[string]string{
	queue.KeyAudit:      "Audit",
	queue.KeyDupHigh:    "DupHigh",
	queue.KeyBitReport:  "BitReport",
	queue.KeyBitError:   "BitError",
	queue.KeyDupLow:     "DupLow",
	queue.KeyBit:        "Bit",
	queue.KeyDeadLetter: "DeadLetter",
}

const (
	workRetention       = 4 * 24 * 3600
	deadLetterRetention = 14 * 24 * 3600
	maxReceiveCount     = 10
)

// TestCoreTemplateNamesMatchCode keeps core.yaml and pkg/queue in step: one
// queue per key, named prefix+key, each exported.
func TestCoreTemplateNamesMatchCode(t *testing.T) {
	body := readTemplate(t, "core.yaml")
	if len(queueOutputs) != len(queue.AllKeys) {
		t.Fatalf("test knows %d queues, pkg/queue has %d", len(queueOutputs), len(queue.AllKeys))
	}
	for _, key := range queue.AllKeys {
		stem, ok := queueOutputs[key]
		if !ok {
			t.Errorf("queue key %q has no output stem in this test", key)
			continue
		}
		if want := `QueueName: !Sub "${Prefix}` + key + `"`; !strings.Contains(body, want) {
			t.Errorf("core.yaml: no queue named prefix+%q (want %s)", key, want)
		}
		for _, o := range []string{"QueueUrl", "QueueArn", "QueueName"} {
			if !strings.Contains(body, "\n  "+stem+o+":\n") {
				t.Errorf("core.yaml: missing output %s%s", stem, o)
			}
		}
	}
	// pkg/lease's item attributes.
	for _, want := range []string{"AttributeName: name, AttributeType: S", "AttributeName: expires_at"} {
		if !strings.Contains(body, want) {
			t.Errorf("core.yaml: lease table lacks %q", want)
		}
	}
	// pkg/fleet's keys.
	for _, want := range []string{"AttributeName: " + dynamofleet.AttrKind + ", KeyType: HASH", "AttributeName: " + dynamofleet.AttrID + ", KeyType: RANGE",
		`TableName: !Sub "${Prefix}fleet"`} {
		if !strings.Contains(body, want) {
			t.Errorf("core.yaml: fleet table lacks %q", want)
		}
	}
}

// TestCoreStackDeploys deploys core.yaml to the local emulator under a unique
// prefix, checks every queue (with its redrive policy and retention), bucket
// and table, deletes the stack, checks that the queues went and the retained
// buckets and tables stayed, and removes those.
func TestCoreStackDeploys(t *testing.T) {
	cfg := testenv.AWS(t)
	prefix := testenv.Prefix(t)
	stack := "mill-core-" + strings.TrimSuffix(prefix, "-")
	cfn := cloudformation.NewFromConfig(cfg.AWS)
	sqsc, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	acct := accountID(t, cfg)
	bucketName := func(key string) string { return prefix + key + "-" + acct + "-" + cfg.AWS.Region }

	// Cleanups run last-registered first: the stack goes before the
	// leftovers are swept (a failed run may leave anything behind).
	testenv.CleanupQueues(t, sqsc, prefix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, b := range []string{"config", "state", "reports"} {
			name := bucketName(b)
			_ = testenv.EmptyBucket(ctx, s3c, name)
			_, _ = s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
		}
		for _, tb := range []string{"audit-log", "leases", "fleet"} {
			_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(prefix + tb)})
		}
	})
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			deleteStack(t, cfn, stack)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	outputs := createStack(ctx, t, cfn, stack, "core.yaml", map[string]string{
		"Prefix": prefix, "VisibilityTimeoutSeconds": "120",
		// A throw-away stack: let the cleanup delete the retained tables.
		"TableDeletionProtection": "false",
	})
	if outputs["Prefix"] != prefix {
		t.Errorf("output Prefix = %q, want %q", outputs["Prefix"], prefix)
	}

	// The notification topic: named prefix+"notifications", reachable
	// through its exported ARN (what --notify-topic-arn is given).
	topicArn := outputs["NotificationTopicArn"]
	if !strings.HasSuffix(topicArn, ":"+prefix+"notifications") {
		t.Errorf("output NotificationTopicArn = %q, want a topic named %snotifications", topicArn, prefix)
	} else if _, err := cfg.SNS().GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(topicArn)}); err != nil {
		t.Errorf("notification topic %s: %v", topicArn, err)
	}

	// Queues.
	dlqArn := outputs["DeadLetterQueueArn"]
	for _, key := range queue.AllKeys {
		stem := queueOutputs[key]
		name := queue.Name(prefix, key)
		got, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Errorf("queue %s: %v", name, err)
			continue
		}
		url := aws.ToString(got.QueueUrl)
		// moto answers Ref with the queue's AWS URL, not its own endpoint's:
		// compare the account/name path, which both share.
		if tail := "/" + acct + "/" + name; !strings.HasSuffix(outputs[stem+"QueueUrl"], tail) || !strings.HasSuffix(url, tail) {
			t.Errorf("output %sQueueUrl = %q, want a URL ending %q (GetQueueUrl says %q)", stem, outputs[stem+"QueueUrl"], tail, url)
		}
		if outputs[stem+"QueueName"] != name {
			t.Errorf("output %sQueueName = %q, want %q", stem, outputs[stem+"QueueName"], name)
		}
		attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		})
		if err != nil {
			t.Errorf("queue %s attributes: %v", name, err)
			continue
		}
		a := attrs.Attributes
		if a["QueueArn"] != outputs[stem+"QueueArn"] {
			t.Errorf("output %sQueueArn = %q, want %q", stem, outputs[stem+"QueueArn"], a["QueueArn"])
		}
		if a["VisibilityTimeout"] != "120" {
			t.Errorf("queue %s VisibilityTimeout = %q, want the parameter's 120", name, a["VisibilityTimeout"])
		}
		if a["SqsManagedSseEnabled"] != "true" {
			t.Errorf("queue %s SqsManagedSseEnabled = %q, want true", name, a["SqsManagedSseEnabled"])
		}
		wantRetention := workRetention
		if key == queue.KeyDeadLetter {
			wantRetention = deadLetterRetention
			if rp := a["RedrivePolicy"]; rp != "" {
				t.Errorf("dead-letter queue has a redrive policy: %s", rp)
			}
		} else {
			checkRedrive(t, name, a["RedrivePolicy"], dlqArn)
		}
		if a["MessageRetentionPeriod"] != strconv.Itoa(wantRetention) {
			t.Errorf("queue %s MessageRetentionPeriod = %q, want %d", name, a["MessageRetentionPeriod"], wantRetention)
		}
	}

	// Buckets.
	for _, b := range []struct{ key, output string }{{"config", "ConfigBucketName"}, {"state", "StateBucketName"}, {"reports", "ReportsBucketName"}} {
		name := bucketName(b.key)
		if outputs[b.output] != name {
			t.Errorf("output %s = %q, want %q", b.output, outputs[b.output], name)
		}
		if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("bucket %s: %v", name, err)
			continue
		}
		enc, err := s3c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String(name)})
		if err != nil {
			t.Errorf("bucket %s encryption: %v", name, err)
		} else if r := enc.ServerSideEncryptionConfiguration.Rules; len(r) != 1 || r[0].ApplyServerSideEncryptionByDefault == nil ||
			r[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != "AES256" {
			t.Errorf("bucket %s encryption rules = %+v, want one AES256 default", name, r)
		}
	}

	// Tables.
	audit := describeTable(ctx, t, ddb, prefix+"audit-log")
	if audit != nil {
		checkKeys(t, "audit log", audit.KeySchema, "pk", "sk")
		if audit.BillingModeSummary == nil || audit.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
			t.Errorf("audit log billing mode = %+v, want PAY_PER_REQUEST", audit.BillingModeSummary)
		}
		var gsi *ddbtypes.GlobalSecondaryIndexDescription
		for i := range audit.GlobalSecondaryIndexes {
			if aws.ToString(audit.GlobalSecondaryIndexes[i].IndexName) == "space-history" {
				gsi = &audit.GlobalSecondaryIndexes[i]
			}
		}
		if gsi == nil {
			t.Errorf("audit log has no space-history index: %+v", audit.GlobalSecondaryIndexes)
		} else {
			checkKeys(t, "space-history index", gsi.KeySchema, "gsi1pk", "gsi1sk")
			if gsi.Projection == nil || gsi.Projection.ProjectionType != ddbtypes.ProjectionTypeAll {
				t.Errorf("space-history projection = %+v, want ALL", gsi.Projection)
			}
		}
	}
	if leases := describeTable(ctx, t, ddb, prefix+"leases"); leases != nil {
		checkKeys(t, "leases", leases.KeySchema, "name", "")
	}
	if ft := describeTable(ctx, t, ddb, prefix+"fleet"); ft != nil {
		checkKeys(t, "fleet", ft.KeySchema, dynamofleet.AttrKind, dynamofleet.AttrID)
	}
	if t.Failed() {
		return
	}

	// Delete: queues go with the stack; buckets and tables are retained.
	deleteStack(t, cfn, stack)
	deleted = true
	left, err := sqsc.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	if err != nil {
		t.Fatalf("list queues: %v", err)
	}
	if len(left.QueueUrls) != 0 {
		t.Errorf("queues left after stack deletion: %v", left.QueueUrls)
	}
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(outputs["StateBucketName"])}); err != nil {
		t.Errorf("state bucket not retained after stack deletion: %v", err)
	}
	if describeTable(ctx, t, ddb, prefix+"audit-log") == nil {
		t.Errorf("audit log table not retained after stack deletion")
	}
}

func readTemplate(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read template: %v", err)
	}
	return string(b)
}

func checkRedrive(t *testing.T, queueName, policy, dlqArn string) {
	t.Helper()
	if policy == "" {
		t.Errorf("queue %s has no redrive policy", queueName)
		return
	}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"` // a number or a string, depending on the service
	}
	if err := json.Unmarshal([]byte(policy), &rp); err != nil {
		t.Errorf("queue %s redrive policy %q: %v", queueName, policy, err)
		return
	}
	if rp.DeadLetterTargetArn != dlqArn {
		t.Errorf("queue %s redrives to %q, want %q", queueName, rp.DeadLetterTargetArn, dlqArn)
	}
	if got := strings.Trim(strings.TrimSpace(toString(rp.MaxReceiveCount)), `"`); got != strconv.Itoa(maxReceiveCount) {
		t.Errorf("queue %s maxReceiveCount = %v, want %d", queueName, rp.MaxReceiveCount, maxReceiveCount)
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func checkKeys(t *testing.T, what string, ks []ddbtypes.KeySchemaElement, hash, rng string) {
	t.Helper()
	var gotHash, gotRange string
	for _, k := range ks {
		switch k.KeyType {
		case ddbtypes.KeyTypeHash:
			gotHash = aws.ToString(k.AttributeName)
		case ddbtypes.KeyTypeRange:
			gotRange = aws.ToString(k.AttributeName)
		}
	}
	if gotHash != hash || gotRange != rng {
		t.Errorf("%s keys = (%q, %q), want (%q, %q)", what, gotHash, gotRange, hash, rng)
	}
}

func describeTable(ctx context.Context, t *testing.T, c *dynamodb.Client, name string) *ddbtypes.TableDescription {
	t.Helper()
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		var nf *ddbtypes.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Errorf("describe table %s: %v", name, err)
		}
		return nil
	}
	return out.Table
}

func accountID(t *testing.T, cfg *awsconfig.Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := cfg.STS().GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatalf("get caller identity: %v", err)
	}
	return aws.ToString(id.Account)
}

// createStack creates stack from template with params, waits until it is
// complete and returns its outputs; a failure ends the test.
func createStack(ctx context.Context, t *testing.T, cfn *cloudformation.Client, stack, template string, params map[string]string) map[string]string {
	t.Helper()
	in := &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(readTemplate(t, template))}
	for k, v := range params {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := cfn.CreateStack(ctx, in); err != nil {
		t.Fatalf("create stack: %v", err)
	}
	w := cloudformation.NewStackCreateCompleteWaiter(cfn, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 500*time.Millisecond, 2*time.Second
	})
	out, err := w.WaitForOutput(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)}, 40*time.Second)
	if err != nil {
		t.Fatalf("stack %s did not reach CREATE_COMPLETE: %v%s", stack, err, stackEvents(ctx, cfn, stack))
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return outputs
}

func deleteStack(t *testing.T, c *cloudformation.Client, stack string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if _, err := c.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		t.Errorf("delete stack %s: %v", stack, err)
		return
	}
	w := cloudformation.NewStackDeleteCompleteWaiter(c, func(o *cloudformation.StackDeleteCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 500*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)}, 30*time.Second); err != nil {
		t.Errorf("stack %s did not reach DELETE_COMPLETE: %v%s", stack, err, stackEvents(ctx, c, stack))
	}
}

// stackEvents returns the stack's failure events, for an error message.
func stackEvents(ctx context.Context, c *cloudformation.Client, stack string) string {
	out, err := c.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range out.StackEvents {
		if strings.HasSuffix(string(e.ResourceStatus), "FAILED") {
			b.WriteString("\n  " + aws.ToString(e.LogicalResourceId) + " " + string(e.ResourceStatus) + ": " + aws.ToString(e.ResourceStatusReason))
		}
	}
	return b.String()
}
