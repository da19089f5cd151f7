package adversarial

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// SQS is at least once from the sender's side too: a SendMessage (or
// SendMessageBatch) whose answer breaks after SQS took the message is
// retried by the SDK's retryer ("use of closed network connection",
// "connection reset" and a body cut short are retryable), and the queue
// then holds the message twice, under two message IDs. A test that counts
// one dead letter per message sent must allow one more for each retry.

// resends counts the attempts past the first of the SQS send calls of a
// client made with its option: the most copies of a message a send may
// have added beyond the one it meant to.
type resends struct{ n atomic.Int64 }

// option is an sqs.Options function that counts the client's resends.
func (r *resends) option(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("CountSendRetries", func(ctx context.Context, in middleware.InitializeInput,
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

// count returns the resends so far.
func (r *resends) count() int { return int(r.n.Load()) }

// sendRetried sends body to the queue of key through a proxy that breaks
// the answer to the first request after the emulator took the message,
// so that the SDK sends it again: the queue holds it twice, two message
// IDs for one body. It fails the test unless the SDK made exactly two
// attempts (r counts the second). False when there is no emulator to
// proxy (a run against real AWS).
func (m *mill) sendRetried(key, body string, r *resends) bool {
	m.t.Helper()
	if testenv.Endpoint() == "" {
		return false
	}
	u, err := url.Parse(testenv.Endpoint())
	must(m.t, err)
	proxy, err := faultproxy.NewHTTP(u.Host)
	must(m.t, err)
	defer proxy.Close()
	first := true // read under the proxy's lock
	proxy.BreakBodies(1, func(*http.Request) bool {
		b := first
		first = false
		return b
	})
	c := m.cfg.SQS(r.option, func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) })
	before := r.count()
	_, err = c.SendMessage(m.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.urls[key]), MessageBody: aws.String(body)})
	must(m.t, err)
	if proxy.Breaks() != 1 || r.count()-before != 1 {
		m.t.Fatalf("a send whose first answer broke: %d answers broken, %d resends counted; want 1 and 1", proxy.Breaks(), r.count()-before)
	}
	return true
}
