package endpoint

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
)

// Behind a proxy the dialer sees only the proxy: the endpoint's own host is
// checked before the request is handed to it.
func TestProxyChecksTheEndpoint(t *testing.T) {
	proxy, _ := url.Parse("http://proxy.internal:3128")
	p := guardProxy(func(*http.Request) (*url.URL, error) { return proxy, nil }, nil)
	for host, want := range map[string]error{
		"169.254.169.254": ErrForbidden,
		"[fd00:ec2::254]": ErrForbidden,
		"127.0.0.1:4566":  nil,
		"localhost:4566":  nil,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/b/k", nil)
		got, err := p(req)
		if !errors.Is(err, want) || (want == nil && got != proxy) {
			t.Errorf("proxy for %s: %v, %v; want %v", host, got, err, want)
		}
	}
	// No proxy for the request: nothing to check here (the dialer does).
	direct := guardProxy(func(*http.Request) (*url.URL, error) { return nil, nil }, nil)
	req, _ := http.NewRequest(http.MethodGet, "http://169.254.169.254/", nil)
	if u, err := direct(req); u != nil || err != nil {
		t.Errorf("direct: %v, %v", u, err)
	}
	if guardProxy(nil, nil) != nil {
		t.Error("no proxy function must stay none")
	}
	if err := checkHost(t.Context(), &net.Resolver{}, "localhost"); err != nil {
		t.Errorf("localhost: %v", err)
	}
}
