package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// DefaultConnectTimeout bounds the reachability check of an endpoint (one
// TCP connection, through the proxy the environment names, if any).
const DefaultConnectTimeout = 2 * time.Second

// UnreachableError says that an endpoint could not be connected to, and
// what to do about it, in one line. It is never retried: retries are for
// transient errors of a service that answers, and waiting minutes for one
// that does not helps nobody.
type UnreachableError struct {
	// Endpoint is the URL that could not be reached.
	Endpoint string
	// Source says where the endpoint comes from: an environment variable
	// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, …), "the AWS profile", or
	// empty for an AWS service endpoint the SDK chose.
	Source string
	// Err is the connection error.
	Err error
	// Proxy is the proxy that could not be connected to, if one was
	// in the way.
	Proxy string
}

func (e *UnreachableError) Error() string {
	from := ""
	if e.Source != "" {
		from = " (" + e.Source + ")"
	}
	if e.Proxy != "" {
		from += " through the proxy " + e.Proxy
	}
	return fmt.Sprintf("cannot reach %s%s: %s; %s", e.Endpoint, from, shortNetError(e.Err), e.Hint())
}

// Hint is the likely fix.
func (e *UnreachableError) Hint() string {
	switch {
	case strings.HasPrefix(e.Source, "AWS_ENDPOINT_URL"):
		return "is the local emulator running? Start it with `make up` (then `eval \"$(make -s env)\"`), or unset " + e.Source + " to use AWS"
	case e.Source != "":
		return "is the endpoint_url of the AWS profile right?"
	}
	return "check the network, the proxy settings (HTTPS_PROXY) and AWS_REGION; for the local emulator run `make up` and set AWS_ENDPOINT_URL (`eval \"$(make -s env)\"`)"
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// RetryableError tells the SDK's retryer not to retry.
func (e *UnreachableError) RetryableError() bool { return false }

// shortNetError drops the "dial tcp" preamble's repetition of the address.
func shortNetError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// reacher checks, once per host, that a TCP connection can be made to an
// endpoint before the first request goes there. Hosts that answered are
// remembered; a failed check is not, so a later call tries again.
type reacher struct {
	timeout time.Duration
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy   func(*http.Request) (*url.URL, error)
	// sources names where each endpoint override comes from, by host.
	sources map[string]string

	mu    sync.Mutex
	hosts map[string]*hostCheck
}

type hostCheck struct {
	mu sync.Mutex
	ok bool
}

func newReacher(timeout time.Duration) *reacher {
	d := &net.Dialer{}
	return &reacher{timeout: timeout, dial: d.DialContext, proxy: http.ProxyFromEnvironment,
		sources: map[string]string{}, hosts: map[string]*hostCheck{}}
}

// check connects to u's host (or to the proxy that would carry a request
// to it) unless that already succeeded once.
func (r *reacher) check(ctx context.Context, u *url.URL) error {
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && (ip.IsLinkLocalUnicast() || ip == imdsV6) {
		return nil // the instance metadata service: its clients have their own short timeouts
	}
	addr := hostPort(u)
	r.mu.Lock()
	h, ok := r.hosts[addr]
	if !ok {
		h = &hostCheck{}
		r.hosts[addr] = h
	}
	r.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok {
		return nil
	}
	target := addr
	if r.proxy != nil {
		if p, err := r.proxy(&http.Request{URL: u}); err == nil && p != nil {
			target = hostPort(p)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	conn, err := r.dial(dctx, "tcp", target)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the caller gave up; nothing to say of the endpoint
		}
		ue := &UnreachableError{Endpoint: (&url.URL{Scheme: u.Scheme, Host: u.Host}).String(), Source: r.sources[addr], Err: err}
		if target != addr {
			ue.Proxy = target
		}
		return ue
	}
	conn.Close()
	h.ok = true
	return nil
}

// imdsV6 is the instance metadata service's IPv6 address.
var imdsV6 = netip.MustParseAddr("fd00:ec2::254")

// hostPort is u's host:port, with the scheme's default port.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return net.JoinHostPort(u.Hostname(), "443")
}

// checkedClient checks that a request's host can be reached before the
// first request to it.
type checkedClient struct {
	inner aws.HTTPClient
	r     *reacher
}

func (c *checkedClient) Do(req *http.Request) (*http.Response, error) {
	if err := c.r.check(req.Context(), req.URL); err != nil {
		return nil, err
	}
	return c.inner.Do(req)
}
