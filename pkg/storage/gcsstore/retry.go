package gcsstore

import (
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// retrying retries the idempotent requests of the JSON API (GET and HEAD,
// which carry no body: reads of attributes, listings and downloads) that
// failed transiently — a 408, 429 or 5xx answer, or a connection error —
// up to retries more times, waiting first then twice as long each time,
// as Google's client libraries do. Writes are not retried here: a
// resumable upload retries its own chunks, and a failed write fails the
// task, which Workman retries.
type retrying struct {
	next    http.RoundTripper
	retries int
	first   time.Duration
}

// Default retries of an idempotent request and the first wait.
const (
	defaultRetries    = 4
	defaultRetryFirst = 200 * time.Millisecond
)

func (t retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	if (req.Method != http.MethodGet && req.Method != http.MethodHead) || req.Body != nil && req.Body != http.NoBody {
		return t.next.RoundTrip(req)
	}
	wait := t.first
	for attempt := 0; ; attempt++ {
		res, err := t.next.RoundTrip(req)
		if attempt == t.retries || !transient(res, err) || req.Context().Err() != nil {
			return res, err
		}
		if res != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
			res.Body.Close()
		}
		if err := clock.Sleep(req.Context(), clock.Real{}, wait); err != nil {
			return nil, err
		}
		wait *= 2
	}
}

// transient reports whether a request's outcome is worth another try.
func transient(res *http.Response, err error) bool {
	if err != nil {
		var ne net.Error
		return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
	}
	return res.StatusCode == http.StatusRequestTimeout || res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500
}

// CloseIdleConnections closes the idle connections of the transport
// below (http.Client.CloseIdleConnections).
func (t retrying) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
