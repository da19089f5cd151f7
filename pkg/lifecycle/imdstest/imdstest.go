// Package imdstest is a stub of the EC2 instance metadata service for
// tests: an HTTP server on loopback answering IMDSv2's token request and
// the metadata paths it is given, 404 for the rest. Point the SDK at it
// with AWS_EC2_METADATA_SERVICE_ENDPOINT=URL (or imds.Options.Endpoint).
package imdstest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const tokenHeader = "X-Aws-Ec2-Metadata-Token"

// Server is a running stub.
type Server struct {
	URL string
	mu  sync.Mutex
	md  map[string]string // path under /latest/meta-data/ → value
	n   map[string]int    // requests per path
}

// Start runs a stub serving md (paths under /latest/meta-data/) until the
// test ends.
func Start(t testing.TB, md map[string]string) *Server {
	t.Helper()
	s := &Server{md: map[string]string{}, n: map[string]int{}}
	for k, v := range md {
		s.md[k] = v
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds"))
		_, _ = w.Write([]byte("stub-token"))
		return
	}
	if r.Header.Get(tokenHeader) != "stub-token" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/latest/meta-data/")
	s.mu.Lock()
	s.n[path]++
	v, found := s.md[path]
	s.mu.Unlock()
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(v))
}

// Set serves value at path from now on.
func (s *Server) Set(path, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.md[path] = value
}

// Requests returns how many times path was asked for.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[path]
}
