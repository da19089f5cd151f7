package sqsqueue

import (
	"context"
	"fmt"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/millfleet/mill/pkg/queue"
)

// Meter counts requests per SQS operation (SendMessageBatch, ReceiveMessage,
// …). Installed on a client it sits in the SDK's deserialize step, below the
// retry loop, so every HTTP attempt counts, retries included. Safe for
// concurrent use.
//
//	meter := sqsqueue.NewMeter()
//	client := sqs.NewFromConfig(cfg, meter.Option())
//
// Snapshot, Total and Reset (from the embedded queue.Counts) read and
// clear the counts by operation name.
type Meter struct {
	queue.Counts
	id string
}

var meterSeq atomic.Int64

// NewMeter returns a meter with every count at zero.
func NewMeter() *Meter {
	return &Meter{id: fmt.Sprintf("MillRequestMeter%d", meterSeq.Add(1))}
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
				m.Add(awsmiddleware.GetOperationName(ctx), 1)
				return next.HandleDeserialize(ctx, in)
			}), middleware.Before)
	}
}
