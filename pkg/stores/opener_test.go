package stores_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// clientProvider records the client and store an s3 provider was opened
// with; it is not a working provider.
type clientProvider struct {
	storage.Provider
	client *s3.Client
	store  stores.Store
}

func TestOpenerCachesAndRejectsUnknown(t *testing.T) {
	reg, err := stores.LoadFile("../../testdata/accounts/dev-accounts.json")
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	o := stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) {
		opened++
		return &clientProvider{store: s}, nil
	}})
	ctx := context.Background()
	p1, err := o.Open(ctx, "demo", "2")
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := o.Open(ctx, "demo", "2")
	if p1 != p2 || opened != 1 {
		t.Fatalf("provider not cached (opened %d)", opened)
	}
	if got := p1.(*clientProvider).store.Root; got != "/tmp/mill-dev/demo-2" {
		t.Fatalf("root %q", got)
	}
	if _, err := o.Open(ctx, "demo", "9"); !errors.Is(err, stores.ErrUnknownStore) {
		t.Fatal(err)
	}
	if _, err := o.Open(ctx, "nobody", "1"); !errors.Is(err, stores.ErrUnknownAccount) {
		t.Fatal(err)
	}
	// No s3 constructor configured: a clear error.
	reg2, _ := stores.LoadFile("../../testdata/accounts/accounts.json")
	if _, err := stores.NewOpener(reg2, stores.OpenerConfig{}).Open(ctx, "account1", "1"); err == nil || !strings.Contains(err.Error(), "OpenerConfig.S3") {
		t.Fatal(err)
	}
}

// Against the emulator: the store's region applies, and a store with a role
// gets credentials assumed through STS (moto answers AssumeRole), cached per
// role, and reaches its bucket with them.
func TestOpenerS3RegionAndAssumedRole(t *testing.T) {
	cfg := testenv.AWS(t)
	base := cfg.S3()
	ctx := context.Background()
	bucket := testenv.Prefix(t) + "store"
	if _, err := base.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, base, bucket)
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindS3, Bucket: bucket, Prefix: "one/", Region: "us-east-1"},
		{ID: "2", Kind: storage.KindS3, Bucket: bucket, Prefix: "two/", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/mill-replica"},
		{ID: "3", Kind: storage.KindS3, Bucket: bucket, Prefix: "three/", Region: "eu-west-1", Endpoint: testenv.Endpoint(), AmbientCredentials: true},
	}}}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	o := stores.NewOpener(reg, stores.OpenerConfig{AWS: cfg.AWS, PathStyle: cfg.EndpointOverride,
		S3: func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return &clientProvider{client: c, store: s}, nil
		}})
	client := func(id string) *s3.Client {
		p, err := o.Open(ctx, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		return p.(*clientProvider).client
	}
	c1, c2, c3 := client("1"), client("2"), client("3")
	if c3.Options().Region != "eu-west-1" || !c3.Options().UsePathStyle || aws.ToString(c3.Options().BaseEndpoint) != testenv.Endpoint() {
		t.Fatalf("store 3 options: region %s pathstyle %v endpoint %s", c3.Options().Region, c3.Options().UsePathStyle, aws.ToString(c3.Options().BaseEndpoint))
	}
	baseCreds, err := c1.Options().Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roleCreds, err := c2.Options().Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatalf("assume role: %v", err)
	}
	if roleCreds.AccessKeyID == baseCreds.AccessKeyID || roleCreds.SessionToken == "" || !roleCreds.CanExpire {
		t.Fatalf("store 2 did not get assumed-role credentials: %+v", roleCreds)
	}
	again, _ := c2.Options().Credentials.Retrieve(ctx)
	if again.AccessKeyID != roleCreds.AccessKeyID {
		t.Fatal("assumed-role credentials not cached")
	}
	for id, c := range map[string]*s3.Client{"1": c1, "2": c2, "3": c3} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k" + id), Body: strings.NewReader(id)}); err != nil {
			t.Fatalf("store %s: put: %v", id, err)
		}
	}
	sc, err := o.S3Client("acct", "2")
	if err != nil || sc == nil {
		t.Fatal(err)
	}
}

// An object stored without a checksum, read through a store's client,
// prints nothing: the SDK's plain-text "Response has no supported
// checksum" notice would land among JSON log lines (Mill verifies MD5s
// itself).
func TestOpenerS3NoChecksumNotice(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := context.Background()
	bucket := testenv.Prefix(t) + "store"
	base := cfg.S3()
	if _, err := base.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, base, bucket)
	// No checksum is sent, so none is stored.
	if _, err := base.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("v")},
		func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	withLog := cfg.AWS.Copy()
	withLog.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		fmt.Fprintf(&logged, "%s "+format+"\n", append([]any{c}, v...)...)
	})
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindS3, Bucket: bucket, Region: "us-east-1"}}}}}
	o := stores.NewOpener(reg, stores.OpenerConfig{AWS: withLog, PathStyle: cfg.EndpointOverride,
		S3: func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return &clientProvider{client: c, store: s}, nil
		}})
	p, err := o.Open(ctx, "acct", "1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.(*clientProvider).client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(out.Body); err != nil || string(b) != "v" {
		t.Fatalf("read %q, %v", b, err)
	}
	out.Body.Close()
	if logged.Len() != 0 {
		t.Fatalf("the SDK logged:\n%s", logged.String())
	}
}
