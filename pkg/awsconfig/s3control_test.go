package awsconfig

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
)

// With AWS_ENDPOINT_URL_S3_CONTROL (and AWS_ENDPOINT_URL beside it) the S3
// Control client reaches that endpoint as it is — the SDK alone would ask
// for 123456789012.127.0.0.1:port — and sends the account in the
// x-amz-account-id header.
func TestS3ControlUsesItsEndpointWithoutTheAccountHost(t *testing.T) {
	var mu sync.Mutex
	var host, account, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		host, account, path = r.Host, r.Header.Get("x-amz-account-id"), r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(`<DescribeJobResult><Job><JobId>j-1</JobId><Status>Active</Status><Priority>1</Priority></Job></DescribeJobResult>`))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the S3 Control call went to AWS_ENDPOINT_URL: %s %s", r.Method, r.URL)
	}))
	defer other.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", other.URL)
	t.Setenv("AWS_ENDPOINT_URL_S3_CONTROL", srv.URL)
	cfg, err := Load(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.S3Control().DescribeJob(context.Background(), &s3control.DescribeJobInput{AccountId: aws.String("123456789012"), JobId: aws.String("j-1")})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if aws.ToString(out.Job.JobId) != "j-1" || host != strings.TrimPrefix(srv.URL, "http://") || account != "123456789012" || path != "/v20180820/jobs/j-1" {
		t.Fatalf("job %v; request to host %q, account %q, path %q", out.Job, host, account, path)
	}
}
