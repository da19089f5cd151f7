package adversarial

import (
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/workman"
)

// A send the SDK retried may have queued its message twice
// (testenv.SendRetries). A test that counts one dead letter per message
// sent allows one more for each retry: the mill's client counts its
// retried sends (newMill), m.send notes the
// bodies it sent more than once, and deadLetters gives a letter of such a
// body the ID the send returned, so that it counts as that send's letter
// (and a second one is dropped like a letter delivered twice).

// resends counts the retried sends of the clients made with its option
// (testenv.SendRetries) and notes the bodies m.send sent more than once.
type resends struct {
	testenv.SendRetries
	mu     sync.Mutex
	bodies map[string]string // body → message ID, of the sends retried
}

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
	proxy := testenv.EmulatorProxy(m.t)
	first := true // read under the proxy's lock
	proxy.BreakBodies(1, func(*http.Request) bool {
		b := first
		first = false
		return b
	})
	direct := m.sqsc
	defer func() { m.sqsc = direct }()
	m.sqsc = m.cfg.SQS(m.resends.Option, func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) })
	before := m.resends.Count()
	send()
	if proxy.Breaks() != 1 || m.resends.Count()-before != 1 {
		m.t.Fatalf("a send whose first answer broke: %d answers broken, %d resends counted; want 1 and 1", proxy.Breaks(), m.resends.Count()-before)
	}
	return true
}
