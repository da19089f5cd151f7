package faultproxy

import (
	"net/http"
	"strings"
	"time"
)

// slowDownBody is S3's answer to a request above a prefix's rate.
const slowDownBody = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>faultproxy</RequestId></Error>`

// rule is a fault the HTTP proxy answers itself, instead of forwarding.
type rule struct {
	match func(*http.Request) bool
	// A rate limit (Limit): tokens refilled at rate a second, at most
	// burst; a request finding none is answered 503 SlowDown.
	rate, burst, tokens float64
	last                time.Time
	// A failure (Fail): every matching request is answered so.
	status      int
	contentType string
	body        string
}

// Bucket matches the path-style requests to S3 bucket name (what Mill's
// clients send to an emulator): "/name" and "/name/…".
func Bucket(name string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		p := strings.TrimPrefix(r.URL.Path, "/")
		return p == name || strings.HasPrefix(p, name+"/")
	}
}

// Limit answers 503 SlowDown (S3's XML error; no body to a HEAD, as S3)
// to the requests match accepts beyond rate a second, as S3 does on a hot
// prefix: a token bucket holding at most burst requests (at least 1),
// full at the start. Requests within the rate are forwarded. rate <= 0
// removes the limit.
func (h *HTTP) Limit(match func(*http.Request) bool, rate float64, burst int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rate <= 0 || match == nil {
		h.limit = nil
		return
	}
	b := float64(max(burst, 1))
	h.limit = &rule{match: match, rate: rate, burst: b, tokens: b, last: time.Now(), status: http.StatusServiceUnavailable,
		contentType: "application/xml", body: slowDownBody}
}

// Fail answers every request match accepts with status, contentType and
// body until Fail(nil, …) (a service answering only errors: DynamoDB's
// 500 InternalServerError, say). Requests it does not match are forwarded.
func (h *HTTP) Fail(match func(*http.Request) bool, status int, contentType, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if match == nil {
		h.fail = nil
		return
	}
	h.fail = &rule{match: match, status: status, contentType: contentType, body: body}
}

// Answered returns how many requests the proxy answered itself: refused
// by Limit, failed by Fail.
func (h *HTTP) Answered() (refused, failed int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused, h.failed
}

// answer answers r itself when a rule says so, reporting whether it did.
func (h *HTTP) answer(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	var ru *rule
	switch {
	case h.fail != nil && h.fail.match(r):
		ru = h.fail
		h.failed++
	case h.limit != nil && h.limit.match(r):
		l := h.limit
		now := time.Now()
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
		l.last = now
		if l.tokens >= 1 {
			l.tokens--
			h.mu.Unlock()
			return false
		}
		ru = l
		h.refused++
	default:
		h.mu.Unlock()
		return false
	}
	status, ct, body := ru.status, ru.contentType, ru.body
	h.mu.Unlock()
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
	return true
}
