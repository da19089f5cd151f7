package awsconfig

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// An endpoint override nothing listens on fails Load at once with one line
// naming the variable and the fix; one that answers loads.
func TestLoadChecksEndpointOverrides(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	dead := "http://" + closedAddr(t)
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"} {
		t.Setenv(v, dead)
		start := time.Now()
		_, err := Load(t.Context(), Options{Getenv: getenv(map[string]string{v: dead})})
		var ue *UnreachableError
		if !errors.As(err, &ue) || ue.Source != v || ue.Endpoint != dead || time.Since(start) > time.Second {
			t.Fatalf("%s=%s: %v after %v; want an UnreachableError naming it at once", v, dead, err, time.Since(start))
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "make up") || !strings.Contains(msg, "connection refused") {
			t.Errorf("message: %q", msg)
		}
		t.Setenv(v, "")
	}
	live := httptest.NewServer(http.NotFoundHandler())
	defer live.Close()
	t.Setenv("AWS_ENDPOINT_URL", live.URL)
	c, err := Load(t.Context(), Options{Getenv: getenv(map[string]string{"AWS_ENDPOINT_URL": live.URL})})
	if err != nil || !c.EndpointOverride {
		t.Fatalf("a live endpoint: %v, %+v", err, c)
	}
}

// A host that was never reached is refused before the first request, and
// not retried; a host that answered once gets the SDK's retries as usual.
func TestClientsCheckTheirHostOnce(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c, err := Load(t.Context(), Options{Getenv: getenv(nil), MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + closedAddr(t)
	start := time.Now()
	_, err = c.SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(dead) }).ListQueues(t.Context(), &sqs.ListQueuesInput{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Source != "" || !strings.Contains(ue.Error(), "HTTPS_PROXY") {
		t.Fatalf("ListQueues on %s: %v", dead, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v: retried?", took)
	}
	if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(&smithyhttp.RequestSendError{Err: ue}) != aws.FalseTernary {
		t.Error("UnreachableError is retryable")
	}

	// A server that answered once and then stops is retried (3 attempts).
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(`{"QueueUrls":[]}`))
			return
		}
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close() // a transient failure: the connection drops
	}))
	defer srv.Close()
	cl := c.SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	if _, err := cl.ListQueues(t.Context(), &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := cl.ListQueues(t.Context(), &sqs.ListQueuesInput{}); err == nil || errors.As(err, &ue) || attempts.Load() != 4 {
		t.Fatalf("after the host answered once: %v with %d requests; want the SDK's 3 attempts of a transient error", err, attempts.Load())
	}
}

// The check goes through the proxy the environment names, and skips the
// instance metadata service.
func TestReacherProxyAndMetadata(t *testing.T) {
	r := newReacher(time.Second)
	proxyAddr := closedAddr(t)
	r.proxy = func(*http.Request) (*url.URL, error) { return &url.URL{Scheme: "http", Host: proxyAddr}, nil }
	live := httptest.NewServer(http.NotFoundHandler())
	defer live.Close()
	u, _ := url.Parse(live.URL)
	err := r.check(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), "through the proxy "+proxyAddr) {
		t.Fatalf("through a dead proxy: %v", err)
	}
	r.proxy = nil
	if err := r.check(context.Background(), u); err != nil {
		t.Fatalf("without the proxy: %v", err)
	}
	for _, md := range []string{"http://169.254.169.254/latest", "http://[fd00:ec2::254]/latest"} {
		u, _ := url.Parse(md)
		if err := r.check(context.Background(), u); err != nil {
			t.Errorf("%s: %v", md, err)
		}
	}
}
