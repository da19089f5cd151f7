// Package testenv is the support every Mill integration test uses: AWS clients
// for the local emulator, unique resource names with cleanup, and a fresh
// PostgreSQL schema per test.
//
// The rule for services: an integration test asks for a service with AWS(t) or
// Postgres(t). When the service cannot be reached the test fails under CI=true
// (with a message naming the service and how to start it) and is skipped
// otherwise. `go test -short` skips integration tests everywhere. Tests only
// ever target loopback addresses — unless the person running them opts in to
// a real AWS account by setting MILL_TEST_REAL_AWS to that account's ID (see
// AWS); PostgreSQL is always local.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/millfleet/mill/pkg/awsconfig"
)

// InCI reports whether the tests run under CI (CI=true), where a missing
// service is a failure.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Unavailable fails (CI) or skips (elsewhere) the test because service is
// unreachable.
func Unavailable(t testing.TB, service string, cause error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not reachable: %v — start the local services with `make up` (see localstack/)", service, cause)
	if InCI() {
		t.Fatalf("CI=true: integration test needs %s", msg)
	}
	t.Skip(msg)
}

func integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped in -short mode")
	}
}

// RequireLoopback fails the test unless rawURL points at a loopback host.
func RequireLoopback(t testing.TB, what, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: bad URL %q: %v", what, rawURL, err)
	}
	host := u.Hostname()
	if host == "localhost" {
		return
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("%s %q is not a loopback address: tests only target loopback", what, rawURL)
	}
}

var (
	probeMu sync.Mutex
	probed  = map[string]error{} // endpoint → result of the first probe
)

// probe checks once per endpoint that something answers HTTP there.
func probe(ep string) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	if err, ok := probed[ep]; ok {
		return err
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(ep + "/")
	if err == nil {
		resp.Body.Close()
	}
	probed[ep] = err
	return err
}

// Endpoint returns AWS_ENDPOINT_URL.
func Endpoint() string { return os.Getenv("AWS_ENDPOINT_URL") }

// BenchS3EndpointVar names the S3 endpoint of the benchmarks that move big
// objects by ranged reads. moto reads a whole object for every ranged GET,
// so on moto those benchmarks measure moto; LocalStack's S3 serves a range
// in time proportional to the range.
const BenchS3EndpointVar = "MILL_BENCH_S3_ENDPOINT"

// BenchSQSEndpointVar names the SQS endpoint of the benchmarks that read a
// deep queue or race two drains. moto answers a receive in time
// proportional to the queue's depth (about 2 s at 5,000 messages), so on
// moto those benchmarks measure moto; LocalStack's SQS, like SQS, answers
// in milliseconds.
const BenchSQSEndpointVar = "MILL_BENCH_SQS_ENDPOINT"

// BenchS3Endpoint returns MILL_BENCH_S3_ENDPOINT (which must be on
// loopback and answer), else AWS_ENDPOINT_URL.
func BenchS3Endpoint(t testing.TB) string { return benchEndpoint(t, BenchS3EndpointVar, "S3") }

// BenchSQSEndpoint returns MILL_BENCH_SQS_ENDPOINT (which must be on
// loopback and answer), else AWS_ENDPOINT_URL.
func BenchSQSEndpoint(t testing.TB) string { return benchEndpoint(t, BenchSQSEndpointVar, "SQS") }

func benchEndpoint(t testing.TB, name, service string) string {
	t.Helper()
	ep := os.Getenv(name)
	if ep == "" {
		return Endpoint()
	}
	RequireLoopback(t, name, ep)
	if err := probe(ep); err != nil {
		Unavailable(t, "the "+service+" emulator at "+ep, err)
	}
	return ep
}

// RealAWSVar is the switch that points the integration tests at a real AWS
// account instead of the local emulator: set it to the 12-digit ID of the
// account the tests may create (and delete) their resources in.
const RealAWSVar = "MILL_TEST_REAL_AWS"

// RealAWSRegion is the only region the tests run in on real AWS: they create
// buckets without a location constraint, which only us-east-1 accepts.
const RealAWSRegion = "us-east-1"

// RealAWS reports whether the tests run against a real AWS account
// (MILL_TEST_REAL_AWS is set). Tests use it to allow for AWS's timing:
// queue depths and metrics are eventually consistent, for up to a minute.
func RealAWS() bool { return os.Getenv(RealAWSVar) != "" }

// endpointVars are the variables that point the SDK at an emulator.
var endpointVars = []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS",
	"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_STS",
	"AWS_ENDPOINT_URL_CLOUDFORMATION", "AWS_ENDPOINT_URL_S3_CONTROL"}

// AWS returns SDK configuration for the local emulator named by
// AWS_ENDPOINT_URL, failing or skipping the test when it does not answer.
//
// With MILL_TEST_REAL_AWS set it returns configuration for real AWS instead,
// from the SDK's default chain (profile, environment, role), after checking
// that the opt-in is explicit and consistent: MILL_TEST_REAL_AWS is a
// 12-digit account ID, the credentials belong to that account (STS
// GetCallerIdentity), no endpoint variable points elsewhere, and the region
// is RealAWSRegion. Any mismatch fails the test before anything is created.
// Resource names then start with "milltest-" (see Prefix), and every test
// removes what it created.
func AWS(t testing.TB) *awsconfig.Config {
	t.Helper()
	integration(t)
	if account, ok := os.LookupEnv(RealAWSVar); ok {
		return realAWS(t, account)
	}
	ep := Endpoint()
	if ep == "" {
		Unavailable(t, "the AWS emulator", errors.New("AWS_ENDPOINT_URL is not set (source localstack/env.sh)"))
	}
	RequireLoopback(t, "AWS_ENDPOINT_URL", ep)
	if err := probe(ep); err != nil {
		Unavailable(t, "the AWS emulator at "+ep, err)
	}
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{})
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// callerAccount returns the account the configured credentials belong to;
// tests replace it.
var callerAccount = func(ctx context.Context, cfg *awsconfig.Config) (string, error) {
	out, err := sts.NewFromConfig(cfg.AWS).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Account), nil
}

var (
	identityMu sync.Mutex
	identities = map[string]error{} // account → result of the first check
)

func realAWS(t testing.TB, account string) *awsconfig.Config {
	t.Helper()
	if len(account) != 12 || strings.Trim(account, "0123456789") != "" {
		t.Fatalf("%s=%q: set it to the 12-digit ID of the AWS account the tests may create and delete resources in, or unset it to use the local emulator", RealAWSVar, account)
	}
	for _, v := range endpointVars {
		if os.Getenv(v) != "" {
			t.Fatalf("%s is set and so is %s=%s: the tests would not reach real AWS; unset %s (localstack/env.sh sets it)", RealAWSVar, v, os.Getenv(v), v)
		}
	}
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{})
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	if cfg.AWS.Region != RealAWSRegion {
		t.Fatalf("%s: the region is %q; the tests run in %s only (set AWS_REGION=%s)", RealAWSVar, cfg.AWS.Region, RealAWSRegion, RealAWSRegion)
	}
	identityMu.Lock()
	defer identityMu.Unlock()
	checked, ok := identities[account]
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		got, err := callerAccount(ctx, cfg)
		cancel()
		switch {
		case err != nil:
			checked = fmt.Errorf("cannot tell which account the credentials belong to (sts GetCallerIdentity): %w", err)
		case got != account:
			checked = fmt.Errorf("the credentials belong to account %s, not %s", got, account)
		}
		identities[account] = checked
	}
	if checked != nil {
		t.Fatalf("%s=%s: %v; refusing to create resources", RealAWSVar, account, checked)
	}
	return cfg
}

// Unique returns a short random name component (lower-case hex), unique per
// call, for resource names.
func Unique() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AccessKeyID returns a fresh AWS-style access key ID ("AKIA" and 16 upper
// case letters and digits), unique per call: the 20-character prefix
// DuraCloud names an account's space buckets with (<prefix, lower
// case>.<space>). Tests remove such buckets themselves: their names are
// not Prefix's.
func AccessKeyID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var b [16]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return "AKIA" + string(b[:])
}

// RealAWSPrefix starts every resource name the tests create in a real AWS
// account, so that leftovers of an interrupted run are easy to find.
const RealAWSPrefix = "milltest-"

// RunVar names the environment variable that tags the resource names of
// one test run: four lower-case hex digits, set by the leftovers check
// (internal/testkit/testenv/leftovers, which make test runs the tests under) so it
// can tell this run's queues, buckets, tables and schemas from those of
// other runs on a shared emulator.
const RunVar = "MILL_TEST_RUN"

// RunTag returns RunVar's value ("" when unset), failing the test when it
// is not four lower-case hex digits.
func RunTag(t testing.TB) string {
	t.Helper()
	tag := os.Getenv(RunVar)
	if tag != "" && !runTag.MatchString(tag) {
		t.Fatalf("%s=%q: want four lower-case hex digits", RunVar, tag)
	}
	return tag
}

var runTag = regexp.MustCompile(`^[0-9a-f]{4}$`)

// Prefix returns a unique resource-name prefix for this test, such as
// "t3f9a1c20de-" ("milltest-3f9a1c20de-" on real AWS), with the run's tag
// (RunVar) after the "t" when there is one: "t07b23f9a1c20de-". Queues,
// buckets and tables a test creates start with it.
func Prefix(t testing.TB) string {
	t.Helper()
	if RealAWS() {
		return RealAWSPrefix + Unique() + "-"
	}
	return "t" + RunTag(t) + Unique() + "-"
}

// CleanupQueues deletes, when the test ends, every SQS queue whose name
// starts with prefix. On real AWS, where a new queue may take a moment to be
// listed, it lists once more after a few seconds.
func CleanupQueues(t testing.TB, c *sqs.Client, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		deleted := map[string]bool{}
		rounds := 1
		if RealAWS() {
			rounds = 2
		}
		for r := range rounds {
			if r > 0 {
				time.Sleep(5 * time.Second)
			}
			out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
			if err != nil {
				t.Logf("cleanup: list queues %q: %v", prefix, err)
				return
			}
			for _, u := range out.QueueUrls {
				if deleted[u] {
					continue
				}
				deleted[u] = true
				if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
					t.Logf("cleanup: delete queue %s: %v", u, err)
				}
			}
		}
	})
}

// CleanupBucket empties and deletes bucket when the test ends (a bucket that
// does not exist is fine).
func CleanupBucket(t testing.TB, c *s3.Client, bucket string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := EmptyBucket(ctx, c, bucket); err != nil {
			t.Logf("cleanup: empty bucket %s: %v", bucket, err)
		}
		_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
}

// EmptyBucket deletes every object (and object version) in bucket.
func EmptyBucket(ctx context.Context, c *s3.Client, bucket string) error {
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			var nb *s3types.NoSuchBucket
			if errors.As(err, &nb) || strings.Contains(err.Error(), "NoSuchBucket") {
				return nil
			}
			return err
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)}}); err != nil {
				return err
			}
			ids = ids[n:]
		}
	}
	return nil
}

// CleanupTable deletes a DynamoDB table when the test ends.
func CleanupTable(t testing.TB, c *dynamodb.Client, table string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
}

// CreateTable creates a DynamoDB table from its description, waits until
// it is ACTIVE, enables TTL when ttl is not nil, and deletes it when the
// test ends.
func CreateTable(t testing.TB, c *dynamodb.Client, create *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput) {
	t.Helper()
	ctx := context.Background()
	table := aws.ToString(create.TableName)
	// The name is this test's own (Prefix), so "already exists" can only be
	// this very request retried by the SDK after a cut-off answer (moto
	// under load answers a CreateTable with a body whose CRC32 fails).
	var inUse *ddbtypes.ResourceInUseException
	if _, err := c.CreateTable(ctx, create); err != nil && !errors.As(err, &inUse) {
		t.Fatalf("create table %s: %v", table, err)
	}
	CleanupTable(t, c, table)
	w := dynamodb.NewTableExistsWaiter(c)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", table, err)
	}
	if ttl != nil {
		if _, err := c.UpdateTimeToLive(ctx, ttl); err != nil {
			t.Fatalf("enable TTL on %s: %v", table, err)
		}
	}
}

// QueueDepth returns every message a queue holds — visible, in flight and
// delayed — as SQS approximates them.
func QueueDepth(ctx context.Context, c *sqs.Client, url string) (int, error) {
	o, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range o.Attributes {
		var x int
		fmt.Sscan(v, &x)
		n += x
	}
	return n, nil
}
