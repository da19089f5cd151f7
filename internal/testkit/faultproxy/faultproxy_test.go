package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// echo starts a line echo server on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip writes a line on c and reads it back within d.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(got) != line {
		return errors.New("echo mismatch: " + got)
	}
	return nil
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestForwards(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	for _, l := range []string{"a", "bb", "ccc"} {
		if err := roundTrip(c, r, l, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(p.URL(), "http://127.0.0.1:") || p.State() != Up {
		t.Fatalf("URL %q state %v", p.URL(), p.State())
	}
}

func TestCutResetsOpenAndNewConnectionsUntilRestore(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if err := roundTrip(c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if err := roundTrip(c, r, "during", 5*time.Second); err == nil {
		t.Fatal("an open connection still works after Cut")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection hung instead of being reset: %v", err)
	}
	// A new connection is reset: at the dial already, or at the first read.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		err = roundTrip(c2, bufio.NewReader(c2), "new", 5*time.Second)
		c2.Close()
		if err == nil {
			t.Fatal("a new connection works while cut")
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("new connection hung instead of being reset: %v", err)
		}
	}
	// The proxy counts a reset before it resets the connection, so both
	// resets the client saw are counted already: no waiting.
	if st := p.Stats(); st.Reset < 2 {
		t.Fatalf("stats %+v: want at least 2 resets", st)
	}
	p.Restore()
	c3, r3 := dial(t, p)
	if err := roundTrip(c3, r3, "after", 5*time.Second); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

func TestPauseHoldsBytesUntilRestore(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if err := roundTrip(c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Pause()
	if p.State() != Paused {
		t.Fatalf("state %v", p.State())
	}
	if err := roundTrip(c, r, "held", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("paused round trip: %v, want a timeout", err)
	}
	p.Restore()
	// The held line arrives now.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	got, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(got) != "held" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
	if err := roundTrip(c, r, "after", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, target := range []string{"192.0.2.1:80", "example.com:80", "nonsense"} {
		if p, err := New(target); err == nil {
			p.Close()
			t.Errorf("New(%q) accepted", target)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	p := newProxy(t)
	p.Pause()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestShape: request turns are counted and each waits the latency (the
// echo answers while a long line is still being sent, so only the short
// round trips are whole turns), bytes are counted each way, and a connection moves no faster than the rate
// (lower bounds only: a loaded machine can only be slower).
func TestShape(t *testing.T) {
	p := newProxy(t)
	const rate, latency = 1 << 20, 30 * time.Millisecond
	p.SetShape(Shape{Rate: rate, Latency: latency})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	start := time.Now()
	for i := range 3 {
		if err := roundTrip(c, r, "turn"+strings.Repeat("x", i), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 3*latency {
		t.Errorf("3 requests took %v, want at least %v", el, 3*latency)
	}
	if n := p.Stats().Requests; n != 3 {
		t.Errorf("%d request turns, want 3", n)
	}
	// 512 KiB each way at 1 MiB/s: at least (512 KiB - burst)/rate.
	big := strings.Repeat("y", 512<<10)
	start = time.Now()
	if err := roundTrip(c, r, big, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	min := time.Duration(float64((512<<10)-slack(rate)) / rate * float64(time.Second))
	if el := time.Since(start); el < min {
		t.Errorf("512 KiB took %v at %d B/s, want at least %v", el, rate, min)
	}
	st := p.Stats()
	wantBytes := int64(len("turn\nturnx\nturnxx\n") + len(big) + 1)
	if st.BytesUp != wantBytes || st.BytesDown != wantBytes {
		t.Errorf("stats %+v, want %d bytes each way", st, wantBytes)
	}
}

// TestHTTPCutBody: the armed proxy cuts exactly one matching response to
// half its body, framed as complete (no Content-Length, a Content-Range
// of the half); the client reads it without an error; every other
// response passes unchanged.
func TestHTTPCutBody(t *testing.T) {
	body := strings.Repeat("0123456789", 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Header.Get("Range") != "" {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(body)-1, len(body)))
			w.WriteHeader(http.StatusPartialContent)
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	p, err := NewHTTP(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.URL()+path, nil)
		req.Header.Set("Range", "bytes=0-999")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read %s: %v; want a clean end", path, err)
		}
		return resp, string(b)
	}
	p.CutBody(func(r *http.Request) bool { return r.URL.Path == "/b" })
	if _, got := get("/a"); got != body {
		t.Fatalf("/a: %q; want it whole", got)
	}
	resp, got := get("/b")
	if got != body[:50] || resp.ContentLength != -1 || resp.Header.Get("Content-Range") != "bytes 0-49/50" {
		t.Fatalf("/b: %q, length %d, range %q; want the first half framed as whole", got, resp.ContentLength, resp.Header.Get("Content-Range"))
	}
	if _, got := get("/b"); got != body {
		t.Fatalf("/b again: %q; want it whole (one cut only)", got)
	}
	if p.Cuts() != 1 || len(p.Requests()) != 3 {
		t.Fatalf("cuts %d, requests %v", p.Cuts(), p.Requests())
	}
}

// TestHTTPBreakBodies: with BreakBodies(1, match) every matching response
// keeps its status and length, sends half its body and drops the
// connection (the client reads io.ErrUnexpectedEOF); others pass whole,
// and p = 0 stops it.
func TestHTTPBreakBodies(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	p, err := NewHTTP(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	get := func(path string) (string, error) {
		t.Helper()
		resp, err := http.Get(p.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(body)) {
			t.Fatalf("%s: status %d, length %d", path, resp.StatusCode, resp.ContentLength)
		}
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	p.BreakBodies(1, func(r *http.Request) bool { return r.URL.Path == "/b" })
	if got, err := get("/a"); err != nil || got != body {
		t.Fatalf("/a: %d bytes, %v; want it whole", len(got), err)
	}
	if got, err := get("/b"); !errors.Is(err, io.ErrUnexpectedEOF) || got != body[:len(body)/2] {
		t.Fatalf("/b: %d bytes, %v; want half, then an unexpected EOF", len(got), err)
	}
	p.BreakBodies(0, nil)
	if got, err := get("/b"); err != nil || got != body {
		t.Fatalf("/b after p = 0: %d bytes, %v", len(got), err)
	}
	if p.Breaks() != 1 {
		t.Fatalf("breaks %d, want 1", p.Breaks())
	}
}
