package sqsqueue

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Meter counts requests per SQS operation (SendMessageBatch, ReceiveMessage,
// …). Installed on a client it sits in the SDK's deserialize step, below the
// retry loop, so every HTTP attempt counts, retries included. Safe for
// concurrent use.
//
//	meter := sqsqueue.NewMeter()
//	client := sqs.NewFromConfig(cfg, meter.Option())
type Meter struct {
	id     string
	mu     sync.Mutex
	counts map[string]int64
}

var meterSeq atomic.Int64

// NewMeter returns a meter with every count at zero.
func NewMeter() *Meter {
	return &Meter{id: fmt.Sprintf("MillRequestMeter%d", meterSeq.Add(1)), counts: map[string]int64{}}
}

// Option installs the meter on an SQS client's options
// (sqs.NewFromConfig(cfg, m.Option())).
func (m *Meter) Option() func(*sqs.Options) {
	return func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, m.APIOption()) }
}

// APIOption is the stack option itself, for aws.Config.APIOptions or another
// service's client (it counts by operation name alone).
func (m *Meter) APIOption() func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc(m.id,
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				m.add(awsmiddleware.GetOperationName(ctx))
				return next.HandleDeserialize(ctx, in)
			}), middleware.Before)
	}
}

func (m *Meter) add(op string) {
	m.mu.Lock()
	m.counts[op]++
	m.mu.Unlock()
}

// Snapshot returns the counts by operation name.
func (m *Meter) Snapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.counts)
}

// Total returns the sum of the counts.
func (m *Meter) Total() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, v := range m.counts {
		n += v
	}
	return n
}

// Reset sets every count to zero.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.counts)
}
