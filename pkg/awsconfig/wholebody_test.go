package awsconfig_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/awsconfig"
)

// TestBrokenBodiesRetried: through a proxy that breaks 30 % of the GET
// response bodies mid-read, listings and ReadWhole reads of small objects
// succeed every time with the right bytes (the SDK retries the broken
// ones), while a plain GetObject's body breaks in the caller's hands.
func TestBrokenBodiesRetried(t *testing.T) {
	direct := testenv.AWS(t)
	ctx := context.Background()
	proxy := testenv.EmulatorProxy(t)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL())
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{MaxAttempts: 10})
	if err != nil {
		t.Fatal(err)
	}
	bucket := testenv.Prefix(t) + "cut"
	dc := direct.S3()
	if _, err := dc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, dc, bucket)
	body := bytes.Repeat([]byte("accounts.json "), 5000)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := dc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	c := cfg.S3()
	proxy.BreakBodies(0.3, func(r *http.Request) bool { return r.Method == http.MethodGet })
	const n = 12
	plain := 0
	for i := range n {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err != nil || len(out.Contents) != 3 {
			t.Fatalf("listing %d: %v", i, err)
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("b")}, awsconfig.ReadWhole)
		if err != nil {
			t.Fatalf("ReadWhole get %d: %v", i, err)
		}
		b, err := io.ReadAll(g.Body)
		if err != nil || !bytes.Equal(b, body) {
			t.Fatalf("ReadWhole get %d: %d bytes, %v", i, len(b), err)
		}
	}
	retried := proxy.Breaks() // P(none in 24 GETs) = 0.7^24, 2e-4
	// A plain read's body is the caller's: it breaks in its hands (30 %
	// of the time; tried until it does, at most 60 times).
	for i := 0; i < 60 && plain == 0; i++ {
		if g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("b")}); err == nil {
			if _, err := io.ReadAll(g.Body); err != nil {
				plain++
			}
			g.Body.Close()
		}
	}
	t.Logf("%d bodies broken under listings and ReadWhole reads, all retried", retried)
	if retried == 0 || plain == 0 {
		t.Errorf("%d bodies broken under retried reads, %d plain reads broken: the fault was not exercised", retried, plain)
	}
}
