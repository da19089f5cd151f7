package gcsstore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/millfleet/mill/pkg/clock"
)

// TestRetryingTransport: a read answered 503 is tried again until it
// succeeds, within the retries; a write is sent once; a 404 is final.
func TestRetryingTransport(t *testing.T) {
	var calls atomic.Int32
	failFirst := int32(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case r.URL.Path == "/missing":
			http.Error(w, "no such object", http.StatusNotFound)
		case n <= failFirst:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	clk := &instantClock{}
	hc := &http.Client{Transport: retrying{next: http.DefaultTransport, b: &backoff{retries: 3, first: time.Second, clock: clk}}}
	status := func(method, path string) int {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("payload")
		}
		return send(t, hc, method, srv.URL+path, body)
	}
	if got := status(http.MethodGet, "/o"); got != http.StatusOK || calls.Load() != 3 {
		t.Errorf("GET after two 503s: status %d after %d calls, want 200 after 3", got, calls.Load())
	}
	if got := clk.take(); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("waits before the retries: %v, want 1s then 2s", got)
	}
	calls.Store(0)
	if got := status(http.MethodPost, "/o"); got != http.StatusServiceUnavailable || calls.Load() != 1 {
		t.Errorf("POST answered 503: status %d after %d calls, want 503 after 1", got, calls.Load())
	}
	calls.Store(0)
	failFirst = 10
	if got := status(http.MethodGet, "/o"); got != http.StatusServiceUnavailable || calls.Load() != 4 {
		t.Errorf("GET always 503: status %d after %d calls, want 503 after 4 (1 + 3 retries)", got, calls.Load())
	}
	calls.Store(0)
	if got := status(http.MethodGet, "/missing"); got != http.StatusNotFound || calls.Load() != 1 {
		t.Errorf("GET answered 404: status %d after %d calls, want 404 after 1", got, calls.Load())
	}
}

// instantClock is a backoff clock whose timers fire at once: it records
// the waits asked of it, so a test checks the backoff without waiting.
// onWait, when set, runs as each wait starts (a test cancels there).
type instantClock struct {
	mu     sync.Mutex
	waits  []time.Duration
	onWait func()
	never  bool // timers never fire: only the context ends a wait
}

func (c *instantClock) Now() time.Time { return time.Unix(0, 0) }

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	on := c.onWait
	c.mu.Unlock()
	if on != nil {
		on()
	}
	t := firedTimer(make(chan time.Time, 1))
	if !c.never {
		t <- time.Unix(0, 0)
	}
	return t
}

// take returns the waits asked so far and forgets them.
func (c *instantClock) take() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }

// TestBackoffDo: a transiently failing call is tried 1+retries times with
// doubling waits; a permanent error, success or a precondition refusal
// ends it at once; a context ended during a wait ends it with no further
// attempt.
func TestBackoffDo(t *testing.T) {
	clk := &instantClock{}
	b := &backoff{retries: 4, first: 200 * time.Millisecond, clock: clk}
	ctx := t.Context()
	var retriedSeen []bool
	busy := &googleapi.Error{Code: http.StatusServiceUnavailable}
	err := b.do(ctx, func(retried bool) error { retriedSeen = append(retriedSeen, retried); return busy })
	if !errors.Is(err, busy) || len(retriedSeen) != 5 || retriedSeen[0] || !retriedSeen[4] {
		t.Errorf("always 503: %v after %d attempts (retried flags %v), want the 503 after 5, retried from the 2nd", err, len(retriedSeen), retriedSeen)
	}
	if got, want := clk.take(), []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	for _, final := range []error{
		&googleapi.Error{Code: http.StatusPreconditionFailed},
		&googleapi.Error{Code: http.StatusNotFound},
		&googleapi.Error{Code: http.StatusForbidden},
		context.Canceled,
	} {
		n := 0
		err := b.do(ctx, func(bool) error { n++; return final })
		if !errors.Is(err, final) || n != 1 {
			t.Errorf("%v: %v after %d attempts, want it after 1", final, err, n)
		}
	}
	for _, transientErr := range []error{
		&googleapi.Error{Code: http.StatusRequestTimeout},
		&googleapi.Error{Code: http.StatusTooManyRequests},
		&googleapi.Error{Code: http.StatusBadGateway},
		&url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNRESET},
		&url.Error{Op: "Post", URL: "http://x", Err: io.ErrUnexpectedEOF},
	} {
		n := 0
		err := b.do(ctx, func(bool) error {
			if n++; n == 1 {
				return transientErr
			}
			return nil
		})
		if err != nil || n != 2 {
			t.Errorf("%v then success: %v after %d attempts, want success after 2", transientErr, err, n)
		}
	}
	clk.take()

	cctx, cancel := context.WithCancel(ctx)
	stuck := &instantClock{never: true, onWait: cancel}
	n := 0
	err = (&backoff{retries: 4, first: time.Hour, clock: stuck}).do(cctx, func(bool) error { n++; return busy })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, busy) || n != 1 {
		t.Errorf("context cancelled during the wait: %v after %d attempts, want the 503 and context.Canceled after 1", err, n)
	}
}

// TestRetryingTransportWrites: the start of a resumable upload session is
// sent again (with its body) after a 503; a one-request upload, a chunk
// of a session and a PATCH are sent once.
func TestRetryingTransportWrites(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		k := r.Method + " " + r.URL.RawQuery
		bodies[k] = append(bodies[k], string(b))
		n := len(bodies[k])
		mu.Unlock()
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: retrying{next: http.DefaultTransport, b: &backoff{retries: 3, first: time.Second, clock: &instantClock{}}}}
	for _, tc := range []struct {
		method, query string
		want          int // status
		sends         int
	}{
		{http.MethodPost, "uploadType=resumable", http.StatusOK, 2},
		{http.MethodPost, "uploadType=multipart", http.StatusServiceUnavailable, 1},
		{http.MethodPut, "uploadType=resumable&upload_id=abc", http.StatusServiceUnavailable, 1},
		{http.MethodPost, "uploadType=resumable&upload_id=abc", http.StatusServiceUnavailable, 1},
		{http.MethodPatch, "ifMetagenerationMatch=1", http.StatusServiceUnavailable, 1},
	} {
		status := send(t, hc, tc.method, srv.URL+"/upload/storage/v1/b/bk/o?"+tc.query, strings.NewReader(`{"name":"o"}`))
		mu.Lock()
		sent := bodies[tc.method+" "+tc.query]
		mu.Unlock()
		if status != tc.want || len(sent) != tc.sends {
			t.Errorf("%s ?%s answered 503 once: status %d after %d sends, want %d after %d", tc.method, tc.query, status, len(sent), tc.want, tc.sends)
		}
		for _, b := range sent {
			if b != `{"name":"o"}` {
				t.Errorf("%s ?%s: a send carried body %q, want the request's", tc.method, tc.query, b)
			}
		}
	}
}

// send sends a request through hc and returns its answer's status.
func send(t *testing.T, hc *http.Client, method, url string, body io.Reader) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
