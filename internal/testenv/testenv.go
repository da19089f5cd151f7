// Package testenv is the support every Mill integration test uses: AWS clients
// for the local emulator, unique resource names with cleanup, and a fresh
// PostgreSQL schema per test.
//
// The rule for services: an integration test asks for a service with AWS(t) or
// Postgres(t). When the service cannot be reached the test fails under CI=true
// (with a message naming the service and how to start it) and is skipped
// otherwise. `go test -short` skips integration tests everywhere. Tests only
// ever target loopback addresses.
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// AWS returns SDK configuration for the local emulator named by
// AWS_ENDPOINT_URL, failing or skipping the test when it does not answer.
func AWS(t testing.TB) *awsconfig.Config {
	t.Helper()
	integration(t)
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

// Unique returns a short random name component (lower-case hex), unique per
// call, for resource names.
func Unique() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Prefix returns a unique resource-name prefix for this test, such as
// "t3f9a1c20de-". Queues, buckets and tables a test creates start with it.
func Prefix(t testing.TB) string {
	t.Helper()
	return "t" + Unique() + "-"
}

// CleanupQueues deletes, when the test ends, every SQS queue whose name
// starts with prefix.
func CleanupQueues(t testing.TB, c *sqs.Client, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		if err != nil {
			t.Logf("cleanup: list queues %q: %v", prefix, err)
			return
		}
		for _, u := range out.QueueUrls {
			if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
				t.Logf("cleanup: delete queue %s: %v", u, err)
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
	if _, err := c.CreateTable(ctx, create); err != nil {
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

// DatabaseURL returns MILL_DATABASE_URL, failing or skipping the test when
// PostgreSQL does not answer there.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	integration(t)
	u := os.Getenv("MILL_DATABASE_URL")
	if u == "" {
		Unavailable(t, "PostgreSQL", errors.New("MILL_DATABASE_URL is not set (source localstack/env.sh)"))
	}
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatalf("MILL_DATABASE_URL: %v", err)
	}
	RequireLoopback(t, "MILL_DATABASE_URL", "postgres://"+net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		Unavailable(t, "PostgreSQL at "+cfg.Host+":"+fmt.Sprint(cfg.Port), err)
	}
	conn.Close(ctx)
	return u
}

// Schema creates a fresh schema for this test and returns a database URL
// whose connections use it (search_path), dropping it when the test ends.
// Tests that commit use this; each gets an empty database to migrate.
func Schema(t testing.TB) string {
	t.Helper()
	base := DatabaseURL(t)
	name := "t_" + Unique()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create schema "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
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
		if _, err := c.Exec(ctx, "drop schema "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
			t.Logf("cleanup: drop schema %s: %v", name, err)
		}
	})
	return WithSearchPath(base, name)
}

// WithSearchPath returns dbURL with its search_path set to schema.
func WithSearchPath(dbURL, schema string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Pool returns a pgx pool on a fresh schema (see Schema), closed when the
// test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
