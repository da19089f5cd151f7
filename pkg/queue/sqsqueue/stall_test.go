package sqsqueue_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/processors"
)

// stallServer is a TCP listener on loopback that accepts connections and
// reads every request but never answers: a service that stalls.
type stallServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newStallServer(t *testing.T) *stallServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(io.Discard, c) // read, never answer
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *stallServer) addr() string { return s.ln.Addr().String() }

// client is an SQS client (one attempt a call) for the stalled server.
func (s *stallServer) client() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://" + s.addr()),
		Credentials:      aws.AnonymousCredentials{},
		RetryMaxAttempts: 1,
	})
}

// knownURL answers GetQueueUrl itself, so a Queue can be opened on a
// stalled server.
type knownURL struct {
	sqsqueue.API
	url string
}

func (k knownURL) GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(k.url)}, nil
}

// within runs f and returns its error and how long it took, failing the
// test if f has not returned after bound.
func within(t *testing.T, bound time.Duration, f func() error) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(bound):
		t.Fatalf("still waiting for the stalled server after %v", bound)
		return 0, nil
	}
}

// TestStalledServer: every call to an SQS endpoint that accepts requests
// and never answers returns, once its deadline has passed, an error that
// reads as an outage of SQS (processors.IsUnavailable), not the caller's
// own deadline; a receive is given its whole wait first.
func TestStalledServer(t *testing.T) {
	s := newStallServer(t)
	const callTimeout = 200 * time.Millisecond
	const bound = 10 * time.Second // generous: only a failure bound
	cfg := sqsqueue.Config{CallTimeout: callTimeout}
	ctx := context.Background()

	t.Run("open", func(t *testing.T) {
		took, err := within(t, bound, func() error {
			_, err := sqsqueue.Open(ctx, s.client(), "stalled", cfg)
			return err
		})
		checkTimeout(t, err, took, callTimeout, "sqs")
	})

	url := "http://" + s.addr() + "/000000000000/stalled"
	q, err := sqsqueue.Open(ctx, knownURL{API: s.client(), url: url}, "stalled", cfg)
	if err != nil {
		t.Fatal(err)
	}
	dep := "sqs " + s.addr()
	msg := &queue.Message{ID: "m", ReceiptHandle: "rh"}
	for _, c := range []struct {
		name string
		min  time.Duration
		call func() error
	}{
		{"receive", time.Second + callTimeout, func() error {
			_, err := q.Receive(ctx, 10, time.Second)
			return err
		}},
		{"receive without wait", callTimeout, func() error {
			_, err := q.Receive(ctx, 10, 0)
			return err
		}},
		{"send", callTimeout, func() error { return q.Send(ctx, queue.SendEntry{Body: []byte("x")}) }},
		{"delete", callTimeout, func() error { return q.Delete(ctx, msg) }},
		{"change visibility", callTimeout, func() error {
			return q.ChangeVisibility(ctx, queue.VisibilityChange{Message: msg, Timeout: time.Minute})
		}},
		{"release", callTimeout, func() error { return q.Release(ctx, msg) }},
		{"depth", callTimeout, func() error { _, err := q.Depth(ctx); return err }},
		{"visibility timeout", callTimeout, func() error { _, err := q.VisibilityTimeout(ctx); return err }},
		{"purge", callTimeout, func() error { return q.Purge(ctx) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			took, err := within(t, bound, c.call)
			checkTimeout(t, err, took, c.min, dep)
		})
	}

	t.Run("caller's deadline first", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout/2)
		defer cancel()
		_, err := within(t, bound, func() error { _, err := q.Receive(cctx, 10, time.Second); return err })
		var te *sqsqueue.TimeoutError
		if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
			t.Fatalf("receive past the caller's own deadline: %v, want the caller's context.DeadlineExceeded", err)
		}
	})
}

// checkTimeout checks that err is a request timeout of SQS naming dep,
// returned no sooner than min.
func checkTimeout(t *testing.T, err error, took, min time.Duration, dep string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error from a server that never answered")
	}
	if took < min {
		t.Fatalf("gave up after %v, before the deadline (%v): %v", took, min, err)
	}
	var te *sqsqueue.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v (%T): not a *sqsqueue.TimeoutError", err, err)
	}
	if got, ok := processors.IsUnavailable(err); !ok || got != dep {
		t.Fatalf("IsUnavailable(%v) = %q, %v; want %q, true", err, got, ok, dep)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v reads as the caller's own deadline", err)
	}
	if !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("error %q does not say the service did not answer", err)
	}
}

// TestStallThenRecover, on the emulator behind a proxy that goes silent
// (faultproxy's Pause: requests accepted, never forwarded): a receive fails
// with a *TimeoutError at its deadline, and once the proxy forwards again
// the same Queue works with no reopening, receiving a message sent
// meanwhile. (The stalled request, forwarded late, may take the message
// first; it comes back after its visibility timeout, as at-least-once
// allows.)
func TestStallThenRecover(t *testing.T) {
	if testenv.RealAWS() {
		t.Skip("the proxy stands in front of the emulator")
	}
	c, _, prefix := client(t)
	ctx := context.Background()
	if _, err := (setup.Queue{Client: c, QueueName: prefix + "stall", VisibilityTimeout: visibility}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(testenv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	pc := testenv.AWS(t).SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) })
	q, err := sqsqueue.Open(ctx, pc, prefix+"stall", sqsqueue.Config{CallTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := sqsqueue.Open(ctx, c, prefix+"stall", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}

	proxy.Pause()
	_, err = within(t, 10*time.Second, func() error { _, err := q.Receive(ctx, 10, time.Second); return err })
	var te *sqsqueue.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("receive through the silent proxy: %v, want a *sqsqueue.TimeoutError", err)
	}
	proxy.Restore()

	if err := direct.Send(ctx, queue.SendEntry{Body: []byte("after the stall")}); err != nil {
		t.Fatal(err)
	}
	bound := time.After(30 * time.Second)
	for {
		select {
		case <-bound:
			t.Fatal("the message sent after the stall was not received within 30 s")
		default:
		}
		ms, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatalf("receive after the stall: %v", err)
		}
		if len(ms) > 0 {
			if len(ms) != 1 || string(ms[0].Body) != "after the stall" {
				t.Fatalf("received %d messages, first %q", len(ms), ms[0].Body)
			}
			if err := q.Delete(ctx, ms...); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}
