package awsconfig_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/pricing"
)

// servedCounter is an httptest handler that counts the requests it
// answered, by "service Op" as the SDK names them.
type servedCounter struct {
	mu     sync.Mutex
	served map[string]int64
	// fail answers the first fail[op] requests of op with status code.
	fail map[string][2]int
	// drop closes the connection of every request of op, unanswered.
	drop string
}

func (s *servedCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := "s3 " + map[string]string{http.MethodHead: "HeadObject", http.MethodGet: "GetObject", http.MethodPut: "PutObject"}[r.Method]
	if t := r.Header.Get("X-Amz-Target"); t != "" { // SQS's JSON protocol
		op = "sqs " + t[strings.LastIndexByte(t, '.')+1:]
	}
	if op == s.drop {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	s.mu.Lock()
	s.served[op]++
	f := s.fail[op]
	if f[0] > 0 {
		s.fail[op] = [2]int{f[0] - 1, f[1]}
	}
	s.mu.Unlock()
	if f[0] > 0 {
		w.WriteHeader(f[1])
		return
	}
	switch op {
	case "s3 GetObject":
		w.Write([]byte("body"))
	case "sqs GetQueueUrl":
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{"QueueUrl":"http://q/1/q"}`))
	}
}

func (s *servedCounter) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// TestCountedRequests: with the real SDK clients Load builds, every HTTP
// attempt a server answers is counted against the context's
// pricing.Counter by service and operation — the SDK's retries of 503s
// and 500s included, a 404 once — and equals what the server served;
// requests of a context without a Counter, and attempts that got no
// answer, are not counted.
func TestCountedRequests(t *testing.T) {
	srv := &servedCounter{served: map[string]int64{}, fail: map[string][2]int{
		"s3 HeadObject":   {2, http.StatusServiceUnavailable},
		"s3 PutObject":    {1, http.StatusInternalServerError},
		"sqs GetQueueUrl": {1, http.StatusInternalServerError},
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", hs.URL)
	ctx := context.Background()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	fast := func(r aws.Retryer) aws.Retryer { return retry.AddWithMaxBackoffDelay(r, time.Millisecond) }
	s3c := cfg.S3(func(o *s3.Options) { o.Retryer = fast(o.Retryer) })
	sqsc := cfg.SQS(func(o *sqs.Options) { o.Retryer = fast(o.Retryer) })
	b, k := aws.String("bucket"), aws.String("key")

	// Not counted: no Counter in the context.
	if _, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k}); err != nil {
		t.Fatal(err)
	}
	before := srv.counts()

	tctx, c := pricing.WithCounter(ctx)
	if _, err := s3c.HeadObject(tctx, &s3.HeadObjectInput{Bucket: b, Key: k}); err != nil {
		t.Fatalf("HEAD after two 503s: %v", err)
	}
	var wg sync.WaitGroup
	for range 5 { // a task's parts, in parallel
		wg.Go(func() {
			out, err := s3c.GetObject(tctx, &s3.GetObjectInput{Bucket: b, Key: k})
			if err != nil {
				t.Error(err)
				return
			}
			out.Body.Close()
		})
	}
	wg.Wait()
	if _, err := s3c.PutObject(tctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("PUT after a 500: %v", err)
	}
	if _, err := sqsc.GetQueueUrl(tctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")}); err != nil {
		t.Fatalf("GetQueueUrl after a 500: %v", err)
	}
	srv.mu.Lock()
	srv.fail["s3 HeadObject"] = [2]int{1, http.StatusNotFound}
	srv.mu.Unlock()
	if _, err := s3c.HeadObject(tctx, &s3.HeadObjectInput{Bucket: b, Key: k}); err == nil {
		t.Fatal("HEAD of a missing object succeeded")
	}
	srv.drop = "sqs SendMessage"
	if _, err := sqsc.SendMessage(tctx, &sqs.SendMessageInput{QueueUrl: aws.String(hs.URL + "/1/q"), MessageBody: aws.String("m")}); err == nil {
		t.Fatal("a dropped SendMessage succeeded")
	}

	served := srv.counts()
	for op, n := range before {
		served[op] -= n
		if served[op] == 0 {
			delete(served, op)
		}
	}
	want := map[string]int64{"s3 HeadObject": 4, "s3 GetObject": 5, "s3 PutObject": 2, "sqs GetQueueUrl": 2}
	if !maps.Equal(served, want) {
		t.Fatalf("the server served %v, want %v (the test's own premise)", served, want)
	}
	if got := c.Counts(); !maps.Equal(got, served) {
		t.Errorf("counted %v, want what the server served: %v", got, served)
	}
}
