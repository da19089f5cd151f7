package wiring

import (
	"cmp"
	"context"
	"flag"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/telemetry"
)

// Claims configures the claim check (pkg/queue/claimcheck) every Mill
// binary puts around the queues it opens, so a task over the threshold
// (240 KiB) travels as an S3 object and a reference, transparently to
// processors. Every binary that sends or receives tasks must agree on it.
// An empty Bucket turns the claim check off: bodies over SQS's limit are
// then refused at send.
type Claims struct {
	Bucket, Prefix string
	// Tracing, when on, is put around the claim check (outermost), so
	// every queue a binary opens through Claims carries trace context
	// (pkg/telemetry).
	Tracing *telemetry.Tracing
}

// ClaimsFlags registers --claims-bucket and --claims-prefix on fs. By
// default a task body too big for SQS is kept in the state bucket `millctl
// setup` creates, under claims/ (setup expires objects there after the
// dead-letter queue's retention, so a blob whose message was never deleted
// does not stay forever).
func ClaimsFlags(fs *flag.FlagSet) *Claims {
	c := &Claims{}
	fs.StringVar(&c.Bucket, "claims-bucket", setup.DefaultClaimsBucket, "S3 `bucket` for task bodies too big for SQS (claim check; empty: off)")
	fs.StringVar(&c.Prefix, "claims-prefix", setup.DefaultClaimsPrefix, "key `prefix` of the claim-checked bodies in --claims-bucket")
	return c
}

// Wrap returns q claim-checked in c's bucket, or q itself when c is nil
// or has no bucket; traced when c.Tracing is on.
func (c *Claims) Wrap(q queue.Queue, s3c s3blob.API) queue.Queue {
	if c == nil {
		return q
	}
	if c.Bucket != "" {
		q = claimcheck.New(q, s3blob.New(s3c, c.Bucket, "", nil), claimcheck.Config{KeyPrefix: c.Prefix})
	}
	return c.Tracing.Queue(q)
}

// Open opens the SQS queue name and wraps it (see Wrap).
func (c *Claims) Open(ctx context.Context, api sqsqueue.API, s3c s3blob.API, name string, cfg sqsqueue.Config) (queue.Queue, error) {
	q, err := sqsqueue.Open(ctx, api, name, cfg)
	if err != nil {
		return nil, err
	}
	return c.Wrap(q, s3c), nil
}

// DeadLetters returns the inspector of the dead-letter queue called name
// (the prefix's when empty), its queue and the queues it redrives to opened
// through c (see Open), logging to cfg.Logger: what `millctl dlq` and the
// console read and redrive with.
func (c *Claims) DeadLetters(ctx context.Context, api sqsqueue.API, s3c s3blob.API, name string, cfg deadletter.Config) (*deadletter.Inspector, error) {
	cfg.Open = func(ctx context.Context, name string) (queue.Queue, error) {
		return c.Open(ctx, api, s3c, name, sqsqueue.Config{Logger: cfg.Logger})
	}
	q, err := cfg.Open(ctx, cmp.Or(name, queue.Name(cfg.Prefix, queue.KeyDeadLetter)))
	if err != nil {
		return nil, err
	}
	cfg.Queue = q
	return deadletter.New(cfg)
}
