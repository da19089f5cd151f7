// Package reqcount is a request-counting HTTP reverse proxy for tests and
// benchmarks: put in front of the AWS emulator (AWS_ENDPOINT_URL pointing
// at it), it counts every request by service and operation.
package reqcount

import (
	"bytes"
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

// Counter is a request-counting HTTP reverse proxy in front of the AWS
// emulator: it names every request "service Operation" — the service from
// the signature's credential scope, the operation from X-Amz-Target (SQS,
// DynamoDB), or from the method and query (S3) — and counts it.
type Counter struct {
	mu       sync.Mutex
	counts   map[string]int
	byBucket map[string]map[string]int // S3's, by bucket (path-style)
	url      string
	// observe, when set, sees every request's name and body.
	observe func(name string, body []byte)
}

var credScope = regexp.MustCompile(`Credential=[^/]+/[0-9]+/[^/]+/([^/]+)/aws4_request`)

// Start listens on 127.0.0.1 (a free port) and forwards to target (the
// emulator's URL) until the test ends.
func Start(t testing.TB, target string) *Counter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &Counter{counts: map[string]int{}, byBucket: map[string]map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a long poll cut at the end
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := Name(r)
		c.mu.Lock()
		c.counts[name]++
		if strings.HasPrefix(name, "s3 ") {
			b, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			if c.byBucket[b] == nil {
				c.byBucket[b] = map[string]int{}
			}
			c.byBucket[b][name]++
		}
		observe := c.observe
		c.mu.Unlock()
		if observe != nil && r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			observe(name, b)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c.url = "http://" + ln.Addr().String()
	return c
}

// Name is "service Operation" of an AWS request.
func Name(r *http.Request) string {
	svc := "unknown"
	if m := credScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		svc = m[1]
	}
	if tgt := r.Header.Get("X-Amz-Target"); tgt != "" {
		_, op, _ := strings.Cut(tgt, ".")
		return svc + " " + op
	}
	if _, op, ok := strings.Cut(r.URL.Path, "/operation/"); ok { // RPC v2 CBOR
		return svc + " " + op
	}
	if svc != "s3" {
		// The query protocol (SNS, CloudWatch's older one): Action in
		// the form body, which is read and put back.
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && r.Body != nil {
			b, err := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if q, perr := url.ParseQuery(string(b)); err == nil && perr == nil && q.Get("Action") != "" {
				return svc + " " + q.Get("Action")
			}
		}
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

// Take returns the counts since the last take and clears them.
func (c *Counter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.counts
	c.counts = map[string]int{}
	return m
}

// Buckets returns the S3 requests to the named buckets (path-style),
// summed, since the proxy started (Take does not clear them).
func (c *Counter) Buckets(buckets ...string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, b := range buckets {
		for k, n := range c.byBucket[b] {
			out[k] += n
		}
	}
	return out
}

// Observe calls f with the name and body of every request from now on,
// before it is forwarded (a test checks what went on the wire); f must be
// safe for concurrent use.
func (c *Counter) Observe(f func(name string, body []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observe = f
}

// URL is the proxy's "http://host:port".
func (c *Counter) URL() string { return c.url }

// Service sums counts by service (the part of a name before the space).
func Service(counts map[string]int) map[string]int {
	m := map[string]int{}
	for k, n := range counts {
		svc, _, _ := strings.Cut(k, " ")
		m[svc] += n
	}
	return m
}
