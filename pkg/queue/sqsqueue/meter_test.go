package sqsqueue_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

func TestMeterCountsRetriedAttempts(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	meter := sqsqueue.NewMeter()
	c := sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      aws.AnonymousCredentials{},
		RetryMaxAttempts: 3,
	}, meter.Option())
	_, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	if err == nil {
		t.Fatal("expected an error from a failing server")
	}
	if hits.Load() != 3 {
		t.Fatalf("server saw %d attempts, want 3", hits.Load())
	}
	if got := meter.Snapshot(); got["GetQueueUrl"] != 3 || meter.Total() != 3 {
		t.Fatalf("meter %v, want GetQueueUrl: 3", got)
	}
	meter.Reset()
	if meter.Total() != 0 {
		t.Fatal("reset")
	}
}
