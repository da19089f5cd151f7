package sqsqueue

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TimeoutError is an SQS request that got no answer within its deadline
// (a receive's long-poll wait plus Config.CallTimeout; CallTimeout for
// any other request): the service stalled. It reads as an outage of SQS —
// Unavailable names the dependency "sqs <host>" as processors.IsUnavailable
// names the SDK's own transient SQS errors — and as a timeout (Timeout).
//
// What the request did is unknown, as for any lost answer: a send may have
// been delivered (sent again, it is a duplicate, as at-least-once allows),
// a receive may have taken messages (SQS delivers them again when their
// visibility timeout ends), a delete may have happened.
//
// It does not unwrap to context.DeadlineExceeded: that stays a statement
// about the caller's own context, which is still live (a caller whose own
// deadline passes first gets its context's error, as before).
type TimeoutError struct {
	// Action is the SQS action ("ReceiveMessage", "SendMessageBatch", …).
	Action string
	// After is the deadline the request was given.
	After time.Duration
	// Host is the host of the queue's URL ("" before Open resolved it).
	Host string
	// Err is what the SDK returned when the deadline cut the request
	// short, for its text.
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("sqs %s: no answer within %v: %v", e.Action, e.After, e.Err)
}

// Timeout reports true: the request timed out.
func (e *TimeoutError) Timeout() bool { return true }

// Unavailable names the dependency that did not answer: "sqs <host>", or
// "sqs" when the host is not known.
func (e *TimeoutError) Unavailable() string {
	if e.Host == "" {
		return "sqs"
	}
	return "sqs " + strings.ToLower(e.Host)
}

// request runs one SQS request, f, under its deadline: ctx bounded by d.
// When d passes first (ctx is still live) its error is a *TimeoutError.
func request(ctx context.Context, action, host string, d time.Duration, f func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := f(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return &TimeoutError{Action: action, After: d, Host: host, Err: err}
	}
	return err
}

// request runs one request of q (see the function request).
func (q *Queue) request(ctx context.Context, action string, d time.Duration, f func(context.Context) error) error {
	return request(ctx, action, q.host, d, f)
}

// urlHost is the host of a queue URL, or "".
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
