package pricing

import (
	"context"
	"sync"
)

// Counter counts the AWS requests made on behalf of one task, by service
// and operation ("s3 GetObject"). Workman puts one in a task's context
// (WithCounter) and pkg/awsconfig's counting middleware, in every AWS SDK
// client Mill builds, adds one for each HTTP attempt a request of that
// context was answered (retries included); nothing else writes to it, so
// a task message cannot set or inflate its counts. Safe for concurrent use
// (a task's parts go in parallel). The zero value is ready to use.
type Counter struct {
	mu sync.Mutex
	n  map[op]int64
}

type op struct{ service, name string }

type counterKey struct{}

// WithCounter returns ctx carrying a new Counter, and the Counter.
func WithCounter(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, counterKey{}, c), c
}

// FromContext returns the Counter ctx carries, or nil.
func FromContext(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}

// Add counts n requests of operation name of service (lower case: S3,
// SQS, SNS, DynamoDB, "cloudwatch"…). A nil Counter counts nothing.
func (c *Counter) Add(service, name string, n int64) {
	if c == nil || n <= 0 {
		return
	}
	c.mu.Lock()
	if c.n == nil {
		c.n = make(map[op]int64, 4)
	}
	c.n[op{service, name}] += n
	c.mu.Unlock()
}

// Counts returns the counts so far, keyed "service Op" (Request.String),
// or nil when none were made.
func (c *Counter) Counts() map[string]int64 {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.n) == 0 {
		return nil
	}
	out := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		out[k.service+" "+k.name] += v
	}
	return out
}

// AddCounts adds counts b to a (a nil a is made), and returns a.
func AddCounts(a, b map[string]int64) map[string]int64 {
	if a == nil && len(b) > 0 {
		a = make(map[string]int64, len(b))
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}
