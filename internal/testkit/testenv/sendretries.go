package testenv

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// SendRetries counts the attempts past the first of the SQS send calls
// (SendMessage, SendMessageBatch) of the clients made with its Option.
// SQS is at least once from the sender's side too: a send whose answer
// broke after SQS took the message ("use of closed network connection",
// "connection reset", a body cut short) is retried by the SDK, and the
// queue then holds the message twice under two message IDs. A test that
// counts the tasks or dead letters of what it sent allows one more copy
// for each retry counted here. Safe for concurrent use.
type SendRetries struct{ n atomic.Int64 }

// Option is an sqs.Options function that counts the client's retried
// sends.
func (r *SendRetries) Option(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("MillCountSendRetries", func(ctx context.Context, in middleware.InitializeInput,
			next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			switch in.Parameters.(type) {
			case *sqs.SendMessageInput, *sqs.SendMessageBatchInput:
				if res, ok := retry.GetAttemptResults(md); ok && len(res.Results) > 1 {
					r.n.Add(int64(len(res.Results) - 1))
				}
			}
			return out, md, err
		}), middleware.After)
	})
}

// Count returns the retries so far: the most copies the sends may have
// queued beyond the messages they meant to.
func (r *SendRetries) Count() int { return int(r.n.Load()) }
