package sqsqueue

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// attempts records the SDK's attempt results of one call (from its retry
// metadata, retry.GetAttemptResults), whether the call succeeded or not:
// the output's ResultMetadata has them only on success, and a middleware
// of the call sees them either way.
type attempts struct {
	results []retry.AttemptResult
}

// option is the sqs.Options function that records the call's attempts.
// It adds to the call's own copy of the client's options.
func (a *attempts) option(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("MillSendAttempts", func(ctx context.Context, in middleware.InitializeInput,
			next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if res, ok := retry.GetAttemptResults(md); ok {
				a.results = res.Results
			}
			return out, md, err
		}), middleware.After)
	})
}

// logResent logs, as one Warn line, a send the SDK made more than once: an
// attempt whose answer was lost may have been stored by SQS all the same,
// so the queue may hold the entries twice (under other message IDs). The
// line names the queue, the action, the attempts, the entries and, when
// the call succeeded, the message IDs SQS gave the attempt that answered;
// the first attempt's error says why the SDK tried again, err what the
// call itself returned (if it failed).
func (q *Queue) logResent(ctx context.Context, action string, a *attempts, entries int, out *sqs.SendMessageBatchOutput, err error) {
	if len(a.results) < 2 {
		return
	}
	attrs := []slog.Attr{
		slog.String("queue", q.name),
		slog.String("action", action),
		slog.Int("attempts", len(a.results)),
		slog.Int("entries", entries),
	}
	if out != nil {
		ids := make([]string, len(out.Successful))
		for i, s := range out.Successful {
			ids[i] = aws.ToString(s.MessageId)
		}
		attrs = append(attrs, slog.Any("message_ids", ids))
	}
	if first := a.results[0].Err; first != nil {
		attrs = append(attrs, slog.String("first_error", first.Error()))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	q.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "sqsqueue: send retried by the SDK; SQS may have stored an earlier attempt, queueing these messages twice", attrs...)
}
