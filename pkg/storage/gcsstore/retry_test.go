package gcsstore

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
	hc := &http.Client{Transport: retrying{next: http.DefaultTransport, retries: 3}}
	status := func(method, path string) int {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("payload")
		}
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, body)
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
	if got := status(http.MethodGet, "/o"); got != http.StatusOK || calls.Load() != 3 {
		t.Errorf("GET after two 503s: status %d after %d calls, want 200 after 3", got, calls.Load())
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
