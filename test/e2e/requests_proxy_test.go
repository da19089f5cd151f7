package e2e

import (
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// reqCounter is a request-counting HTTP reverse proxy in front of the AWS
// emulator: it names every request "service Operation" — the service from
// the signature's credential scope, the operation from X-Amz-Target (SQS,
// DynamoDB), or from the method and query (S3) — and counts it.
type reqCounter struct {
	mu     sync.Mutex
	counts map[string]int
	url    string
}

var credScope = regexp.MustCompile(`Credential=[^/]+/[0-9]+/[^/]+/([^/]+)/aws4_request`)

func startReqCounter(t *testing.T, target string) *reqCounter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &reqCounter{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a long poll cut at the end
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := requestName(r)
		c.mu.Lock()
		c.counts[name]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c.url = "http://" + ln.Addr().String()
	return c
}

// requestName is "service Operation" of an AWS request.
func requestName(r *http.Request) string {
	svc := "unknown"
	if m := credScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		svc = m[1]
	}
	if tgt := r.Header.Get("X-Amz-Target"); tgt != "" {
		_, op, _ := strings.Cut(tgt, ".")
		return svc + " " + op
	}
	if svc != "s3" {
		return svc + " " + r.Method
	}
	q := r.URL.Query()
	path := strings.Trim(r.URL.Path, "/")
	_, key, _ := strings.Cut(path, "/")
	switch {
	case r.Method == http.MethodGet && q.Has("versioning"):
		return "s3 GetBucketVersioning"
	case r.Method == http.MethodGet && key == "":
		return "s3 ListObjectsV2"
	case r.Method == http.MethodGet:
		return "s3 GetObject"
	case r.Method == http.MethodHead:
		return "s3 HeadObject"
	case r.Method == http.MethodPut && q.Has("partNumber") && r.Header.Get("X-Amz-Copy-Source") != "":
		return "s3 UploadPartCopy"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "s3 UploadPart"
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		return "s3 CopyObject"
	case r.Method == http.MethodPut:
		return "s3 PutObject"
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "s3 CreateMultipartUpload"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "s3 CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "s3 AbortMultipartUpload"
	case r.Method == http.MethodDelete:
		return "s3 DeleteObject"
	case r.Method == http.MethodPost && q.Has("delete"):
		return "s3 DeleteObjects"
	}
	return "s3 " + r.Method
}

// take returns the counts since the last take and clears them.
func (c *reqCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.counts
	c.counts = map[string]int{}
	return m
}

// pgCounter is a TCP proxy in front of PostgreSQL that counts the
// statements clients execute: each simple Query message and each Execute
// message of the extended protocol (a prepared statement's Parse and
// Describe are not statements). BEGIN and COMMIT count.
type pgCounter struct {
	mu    sync.Mutex
	stmts int
	addr  string
}

func startPGCounter(t *testing.T, target string) *pgCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &pgCounter{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var conns sync.Map
	go func() {
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = cl.Close()
				continue
			}
			conns.Store(cl, up)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(cl, up); _ = cl.Close() }()
			go func() { defer wg.Done(); c.pipe(up, cl); _ = up.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, v any) bool { _ = k.(net.Conn).Close(); _ = v.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return c
}

// pipe forwards the client's messages to the server, counting statements.
// The first messages (SSLRequest, StartupMessage) have no type byte.
func (c *pgCounter) pipe(dst io.Writer, src io.Reader) {
	var hdr [5]byte
	started := false
	for {
		if !started {
			if _, err := io.ReadFull(src, hdr[:4]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(hdr[:4]))
			body := make([]byte, max(n-4, 0))
			if _, err := io.ReadFull(src, body); err != nil {
				return
			}
			// SSLRequest and GSSENCRequest are answered by one byte; the
			// startup message (protocol 3.0) starts the typed stream.
			if len(body) >= 4 && binary.BigEndian.Uint32(body[:4]) == 196608 {
				started = true
			}
			if _, err := dst.Write(append(hdr[:4:4], body...)); err != nil {
				return
			}
			continue
		}
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		body := make([]byte, max(n-4, 0))
		if _, err := io.ReadFull(src, body); err != nil {
			return
		}
		if hdr[0] == 'Q' || hdr[0] == 'E' {
			c.mu.Lock()
			c.stmts++
			c.mu.Unlock()
		}
		if _, err := dst.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

func (c *pgCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.stmts
	c.stmts = 0
	return n
}
