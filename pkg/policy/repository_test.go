package policy_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

func samplePolicy() *policy.Policy {
	return &policy.Policy{
		SpacePolicies: map[string][]policy.StorePolicy{"spaceA": {{"1", "2"}}},
		Default:       []policy.StorePolicy{{"1", "3"}},
	}
}

// exerciseRepository runs the same checks on every implementation.
func exerciseRepository(t *testing.T, r policy.Repository) {
	ctx := context.Background()
	accts, err := r.Accounts(ctx)
	if err != nil || len(accts) != 0 {
		t.Fatalf("Accounts on empty = %v, %v", accts, err)
	}
	if _, err := r.Policy(ctx, "acct1"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Policy missing = %v, want ErrNotFound", err)
	}
	if err := r.Put(ctx, "acct1", samplePolicy()); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, "acct2", samplePolicy()); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, "acct1", samplePolicy()); err != nil { // again: listed once
		t.Fatal(err)
	}
	accts, err = r.Accounts(ctx)
	if err != nil || !slices.Equal(accts, []string{"acct1", "acct2"}) {
		t.Fatalf("Accounts = %v, %v", accts, err)
	}
	p, err := r.Policy(ctx, "acct1")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(samplePolicy()) {
		t.Fatalf("read back %+v", p)
	}
	bad := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"s": {{"1", "1"}}}}
	if err := r.Put(ctx, "acct3", bad); err == nil {
		t.Fatal("Put accepted an invalid policy")
	}
	if err := r.Put(ctx, "../etc", samplePolicy()); err == nil {
		t.Fatal("Put accepted a path as account")
	}
	if err := r.Delete(ctx, "acct1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "acct1"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	accts, _ = r.Accounts(ctx)
	if !slices.Equal(accts, []string{"acct2"}) {
		t.Fatalf("Accounts after delete = %v", accts)
	}
	if _, err := r.Policy(ctx, "acct1"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Policy deleted = %v", err)
	}
}

func TestDirRepository(t *testing.T) {
	exerciseRepository(t, policy.NewDir(t.TempDir()))
}

func TestDirRepositoryReadsTestdata(t *testing.T) {
	r := policy.NewDir("../../testdata/policies")
	ctx := context.Background()
	accts, err := r.Accounts(ctx)
	if err != nil || !slices.Equal(accts, []string{"account1", "account2"}) {
		t.Fatalf("Accounts = %v, %v", accts, err)
	}
	for _, a := range accts {
		if _, err := r.Policy(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	_, err = policy.NewDir("../../testdata/policies/invalid").Policy(ctx, "account1")
	if err == nil || err.Error() != "../../testdata/policies/invalid/account1-duplication-policy.json:5:45: trailing comma before ']'" {
		t.Fatalf("err = %v", err)
	}
}

func TestS3Repository(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3()
	bucket := testenv.Prefix(t) + "policies"
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, c, bucket)
	exerciseRepository(t, policy.NewS3(c, bucket, "dup/"))
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("dup/acct2-duplication-policy.json")})
	if err != nil || aws.ToString(out.ContentType) != "application/json" {
		t.Fatalf("policy object under the prefix: %v", err)
	}
	// An object over the size limit is refused, not read.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("dup/big-duplication-policy.json"),
		Body: bytes.NewReader(make([]byte, policy.MaxFileSize+1))}); err != nil {
		t.Fatal(err)
	}
	_, err = policy.NewS3(c, bucket, "dup/").Policy(ctx, "big")
	if !errors.Is(err, jsonpos.ErrTooLarge) || !strings.Contains(err.Error(), "dup/big-duplication-policy.json: larger than the 4194304-byte limit") {
		t.Fatalf("oversized policy object: %v", err)
	}
}

// countingRepo counts reads and can fail them.
type countingRepo struct {
	policy.Repository
	reads atomic.Int32
	fail  atomic.Bool
}

func (c *countingRepo) Accounts(ctx context.Context) ([]string, error) {
	c.reads.Add(1)
	if c.fail.Load() {
		return nil, errors.New("s3 down")
	}
	return c.Repository.Accounts(ctx)
}

func (c *countingRepo) Policy(ctx context.Context, a string) (*policy.Policy, error) {
	c.reads.Add(1)
	if c.fail.Load() {
		return nil, errors.New("s3 down")
	}
	return c.Repository.Policy(ctx, a)
}

func TestCacheRefreshes(t *testing.T) {
	ctx := context.Background()
	dir := policy.NewDir(t.TempDir())
	if err := dir.Put(ctx, "a", samplePolicy()); err != nil {
		t.Fatal(err)
	}
	inner := &countingRepo{Repository: dir}
	clk := clock.NewFake(time.Time{})
	c := policy.NewCache(inner, policy.CacheConfig{Clock: clk})

	for range 3 {
		if _, err := c.Policy(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Policy(ctx, "missing"); !errors.Is(err, policy.ErrNotFound) {
			t.Fatal(err)
		}
		if _, err := c.Accounts(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := inner.reads.Load(); n != 3 {
		t.Fatalf("reads within the refresh period = %d, want 3", n)
	}
	// Someone else changes the policy; the cache sees it after 5 minutes.
	changed := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"other": {{"2", "1"}}}}
	if err := dir.Put(ctx, "a", changed); err != nil {
		t.Fatal(err)
	}
	clk.Advance(policy.DefaultRefresh - time.Second)
	if p, _ := c.Policy(ctx, "a"); p.Equal(changed) {
		t.Fatal("refreshed too early")
	}
	clk.Advance(time.Second)
	if p, _ := c.Policy(ctx, "a"); !p.Equal(changed) {
		t.Fatal("not refreshed after DefaultRefresh")
	}
	// A failed refresh serves the stale entry.
	inner.fail.Store(true)
	clk.Advance(policy.DefaultRefresh)
	if p, err := c.Policy(ctx, "a"); err != nil || !p.Equal(changed) {
		t.Fatalf("stale on failure = %v, %v", p, err)
	}
	// With nothing cached, the failure is returned.
	if _, err := c.Policy(ctx, "never-read"); err == nil || errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("uncached failure = %v", err)
	}
	inner.fail.Store(false)
	// Put goes through and invalidates.
	if err := c.Put(ctx, "a", samplePolicy()); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Policy(ctx, "a"); !p.Equal(samplePolicy()) {
		t.Fatal("Put did not invalidate")
	}
}
