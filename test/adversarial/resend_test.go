package adversarial

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/workman"
)

// SQS is at least once from the sender's side too: a SendMessage (or
// SendMessageBatch) whose answer breaks after SQS took the message is
// retried by the SDK's retryer ("use of closed network connection",
// "connection reset" and a body cut short are retryable), and the queue
// then holds the message twice, under two message IDs. A test that counts
// one dead letter per message sent must allow one more for each retry:
// the mill's client counts its retried sends (newMill), m.send notes the
// bodies it sent more than once, and deadLetters gives a letter of such a
// body the ID the send returned, so that it counts as that send's letter
// (and a second one is dropped like a letter delivered twice).

// resends counts the attempts past the first of the SQS send calls of a
// client made with its option: the most copies of a message a send may
// have added beyond the one it meant to.
type resends struct {
	n      atomic.Int64
	mu     sync.Mutex
	bodies map[string]string // body → message ID, of the sends retried
}

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

// sentAgain notes a send of body that the SDK retried; id is the message
// ID its call returned.
func (r *resends) sentAgain(body, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bodies == nil {
		r.bodies = map[string]string{}
	}
	r.bodies[body] = id
}

// idOf returns the message ID of the send d's task came from: a letter
// of a copy a retried send queued is given the ID the send returned.
func (r *resends) idOf(d *workman.DeadLetter) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.bodies[string(d.Body)]; ok {
		return id
	}
	return d.MessageID
}

// sendingTwice runs send with m.sqsc going through a proxy that breaks
// the answer to its first request after the emulator took the message, so
// that the SDK sends it again: the queue holds it twice, two message IDs
// for one body. It fails the test unless the SDK made exactly two
// attempts. False, send not run, when there is no emulator to proxy (a
// run against real AWS).
func (m *mill) sendingTwice(send func()) bool {
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
	direct := m.sqsc
	defer func() { m.sqsc = direct }()
	m.sqsc = m.cfg.SQS(m.resends.option, func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) })
	before := m.resends.count()
	send()
	if proxy.Breaks() != 1 || m.resends.count()-before != 1 {
		m.t.Fatalf("a send whose first answer broke: %d answers broken, %d resends counted; want 1 and 1", proxy.Breaks(), m.resends.count()-before)
	}
	return true
}
