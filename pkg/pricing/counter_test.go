package pricing_test

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/pricing"
)

// TestCounter: counts by service and operation from many goroutines; a
// context without a counter, and a nil Counter, count nothing.
func TestCounter(t *testing.T) {
	ctx, c := pricing.WithCounter(context.Background())
	if pricing.FromContext(ctx) != c || pricing.FromContext(context.Background()) != nil {
		t.Fatal("FromContext does not return the context's counter")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				pricing.FromContext(ctx).Add(pricing.S3, "GetObject", 1)
			}
			pricing.FromContext(ctx).Add(pricing.SQS, "SendMessageBatch", 1)
			pricing.FromContext(ctx).Add(pricing.SQS, "SendMessageBatch", -3) // ignored
		})
	}
	wg.Wait()
	if got, want := c.Counts(), map[string]int64{"s3 GetObject": 800, "sqs SendMessageBatch": 8}; !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	var none *pricing.Counter
	none.Add(pricing.S3, "GetObject", 1)
	if none.Counts() != nil || (&pricing.Counter{}).Counts() != nil {
		t.Error("an empty or nil counter has counts")
	}
}

// BenchmarkCountedAttempt is what counting costs a task's attempt of a
// few requests: the counter, its context, the adds and the counts handed
// on.
func BenchmarkCountedAttempt(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ctx, c := pricing.WithCounter(context.Background())
		for range 2 {
			pricing.FromContext(ctx).Add(pricing.S3, "HeadObject", 1)
		}
		pricing.FromContext(ctx).Add(pricing.S3, "CopyObject", 1)
		_ = c.Counts()
	}
}
