package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

// HTTP is an HTTP reverse proxy on loopback, for the faults a TCP proxy
// cannot make inside a response. CutBody arms it to cut the body of the
// next response to a matching request and frame what is left as the whole
// of it, so the client sees a well-formed, complete response with fewer
// bytes: a read that goes wrong without an error. Every other request is
// forwarded as it is. Safe for concurrent use.
type HTTP struct {
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	cut      func(*http.Request) bool // armed: the next matching response is cut
	breakP   float64                  // BreakBodies: the fraction broken
	breakM   func(*http.Request) bool
	breaks   int
	cuts     int
	requests []string // "METHOD path" of every request forwarded
	// Rules the proxy answers itself (rate.go).
	limit, fail     *rule
	refused, failed int
}

// NewHTTP listens on 127.0.0.1 (a free port) and forwards HTTP requests to
// target ("host:port", a loopback address), keeping each request's Host
// header (a signed request stays valid).
func NewHTTP(target string) (*HTTP, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("faultproxy: target %q is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	h := &HTTP{ln: ln}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: target})
			r.Out.Host = r.In.Host
		},
		ModifyResponse: h.modify,
		ErrorLog:       log.New(io.Discard, "", 0), // broken bodies are the point
		// Every write goes out at once, so a broken body has sent its
		// status, headers and first half before the connection drops.
		FlushInterval: -1,
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.answer(w, r) {
			return
		}
		h.mu.Lock()
		h.requests = append(h.requests, r.Method+" "+r.URL.Path)
		h.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// URL is the proxy's "http://host:port".
func (h *HTTP) URL() string { return "http://" + h.ln.Addr().String() }

// CutBody arms the proxy: the response to the next request match accepts
// (and only that one) loses the second half of its body, is sent without
// a Content-Length (chunked, ending cleanly after the first half) and,
// when it has a Content-Range, with one that says the half is the whole
// object ("bytes 0-k-1/k"). A client cannot tell it from a response of a
// smaller object.
func (h *HTTP) CutBody(match func(*http.Request) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = match
}

// Cuts returns how many responses were cut.
func (h *HTTP) Cuts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cuts
}

// Requests returns "METHOD path" of every request forwarded so far, in
// the order they arrived.
func (h *HTTP) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.requests...)
}

// take reports whether the response to r is to be cut, disarming the proxy
// when it is.
func (h *HTTP) take(r *http.Request) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cut == nil || !h.cut(r) {
		return false
	}
	h.cut = nil
	h.cuts++
	return true
}

func (h *HTTP) modify(resp *http.Response) error {
	if resp.StatusCode/100 == 2 && h.breaking(resp.Request) {
		resp.Body = &breakingBody{rc: resp.Body, left: max(resp.ContentLength/2, 0)}
		return nil
	}
	if resp.StatusCode/100 != 2 || !h.take(resp.Request) {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	k := len(body) / 2
	resp.Body = io.NopCloser(bytes.NewReader(body[:k]))
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	if resp.Header.Get("Content-Range") != "" {
		resp.Header.Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", k-1, k))
	}
	return nil
}

// BreakBodies makes the proxy break the body of a fraction p (0..1) of
// the successful responses to requests match accepts, at random: the
// status and headers (Content-Length included) go out as they came, then
// the first half of the body, then the connection is aborted — the client
// reads io.ErrUnexpectedEOF mid-body, as when a connection drops. p = 0
// stops it.
func (h *HTTP) BreakBodies(p float64, match func(*http.Request) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.breakP, h.breakM = p, match
}

// Breaks returns how many bodies BreakBodies broke.
func (h *HTTP) Breaks() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.breaks
}

func (h *HTTP) breaking(r *http.Request) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.breakP <= 0 || h.breakM == nil || !h.breakM(r) || rand.Float64() >= h.breakP {
		return false
	}
	h.breaks++
	return true
}

// errBroken aborts the response: the reverse proxy then hangs up.
var errBroken = errors.New("faultproxy: body broken on purpose")

type breakingBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *breakingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBroken
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = errBroken
	}
	return n, err
}

func (b *breakingBody) Close() error { return b.rc.Close() }

// Close stops the proxy and closes its connections.
func (h *HTTP) Close() error {
	err := h.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
