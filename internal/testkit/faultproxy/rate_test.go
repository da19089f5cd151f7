package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHTTPLimitAndFail: beyond its rate one bucket's requests are answered
// 503 SlowDown (no body to a HEAD) while another bucket's pass; Fail
// answers every matching request with the error given until cleared.
func TestHTTPLimitAndFail(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	p, err := NewHTTP(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	p.Limit(Bucket("hot"), 1, 3) // a burst of 3, then 1 a second
	ok, slow := 0, 0
	start := time.Now()
	for range 10 {
		switch code, body := get(http.MethodGet, "/hot/k"); {
		case code == 200:
			ok++
		case code == 503 && strings.Contains(body, "<Code>SlowDown</Code>"):
			slow++
		default:
			t.Fatalf("answer %d %q", code, body)
		}
	}
	if want := 3 + int(time.Since(start).Seconds()); ok < 3 || ok > want+1 {
		t.Errorf("%d of 10 quick requests passed the limit, want the burst of 3 (about %d)", ok, want)
	}
	if code, body := get(http.MethodHead, "/hot/k"); code != 503 || body != "" {
		t.Errorf("HEAD above the rate: %d %q, want 503 without a body", code, body)
	}
	for range 10 {
		if code, _ := get(http.MethodGet, "/hotter/k"); code != 200 {
			t.Fatalf("another bucket answered %d", code)
		}
	}
	if refused, _ := p.Answered(); refused != slow+1 {
		t.Errorf("Answered refused %d, want %d", refused, slow+1)
	}
	p.Limit(nil, 0, 0)
	p.Fail(func(*http.Request) bool { return true }, 500, "application/x-amz-json-1.0", `{"__type":"InternalServerError"}`)
	if code, body := get(http.MethodPost, "/"); code != 500 || !strings.Contains(body, "InternalServerError") {
		t.Errorf("failing: %d %q", code, body)
	}
	p.Fail(nil, 0, "", "")
	if code, _ := get(http.MethodGet, "/hot/k"); code != 200 {
		t.Errorf("after clearing the rules: %d", code)
	}
	if _, failed := p.Answered(); failed != 1 {
		t.Errorf("Answered failed %d, want 1", failed)
	}
}
