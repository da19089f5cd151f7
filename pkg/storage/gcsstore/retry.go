package gcsstore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/millfleet/mill/pkg/clock"
)

// backoff is how a request that failed transiently is tried again: up
// to retries more times, waiting first, then twice as long each time, on
// clock (a test's clock waits no real time), for as long as the request's
// context allows. One backoff serves a client's transport and its stores'
// retried writes.
type backoff struct {
	retries int
	first   time.Duration
	clock   clock.Clock
}

// Default retries of a request and the first wait, as Google's client
// libraries do.
const (
	defaultRetries    = 4
	defaultRetryFirst = 200 * time.Millisecond
)

func defaultBackoff() *backoff {
	return &backoff{retries: defaultRetries, first: defaultRetryFirst, clock: clock.Real{}}
}

// wait sleeps before retry number attempt+1 (attempt counts from 0),
// returning ctx's error when it ends first.
func (b *backoff) wait(ctx context.Context, attempt int) error {
	return clock.Sleep(ctx, clock.Or(b.clock), b.first<<attempt)
}

// do runs call, a request that is idempotent or conditionally idempotent
// (never another), again after a transient failure, within the backoff.
// retried tells call that an earlier attempt failed without saying
// whether GCS applied it: a call then reads a refusal of its precondition
// (412) or a 404 as what its own earlier attempt may have caused.
func (b *backoff) do(ctx context.Context, call func(retried bool) error) error {
	for attempt := 0; ; attempt++ {
		err := call(attempt > 0)
		if err == nil || attempt >= b.retries || !transientErr(err) || ctx.Err() != nil {
			return err
		}
		if werr := b.wait(ctx, attempt); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

// transientErr reports whether a call's error is one Google counts as
// worth another try: a 408, 429 or 5xx answer, or the connection failing
// (a reset, a timeout, a response cut short).
func transientErr(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return transientStatus(ge.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

func transientStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// retrying is the client's transport. It retries, within its backoff, the
// requests that are idempotent whatever their parameters and that fail
// transiently (a 408, 429 or 5xx answer, or a connection error): reads
// (GET and HEAD without a body: attributes, listings, downloads) and the
// start of a resumable upload session (a POST with uploadType=resumable,
// whose body it can send again: a second session commits nothing, and an
// unused one expires). Other requests pass once: the chunks of a resumable
// upload are retried by the REST client, and the conditionally idempotent
// writes by the store's calls (backoff.do), which know their
// preconditions.
type retrying struct {
	next http.RoundTripper
	b    *backoff
}

// idempotentRequest reports whether the transport may send req again.
func idempotentRequest(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return req.Body == nil || req.Body == http.NoBody
	case http.MethodPost:
		q := req.URL.Query()
		return q.Get("uploadType") == "resumable" && !q.Has("upload_id") && req.GetBody != nil
	}
	return false
}

func (t retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	if !idempotentRequest(req) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		try := req
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			try = req.Clone(ctx)
			try.Body = body
		}
		res, err := t.next.RoundTrip(try)
		if attempt >= t.b.retries || !transient(res, err) || ctx.Err() != nil {
			return res, err
		}
		if res != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
			res.Body.Close()
		}
		if err := t.b.wait(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// transient reports whether a request's outcome is worth another try.
func transient(res *http.Response, err error) bool {
	if err != nil {
		return transientErr(err)
	}
	return transientStatus(res.StatusCode)
}

// CloseIdleConnections closes the idle connections of the transport
// below (http.Client.CloseIdleConnections).
func (t retrying) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
