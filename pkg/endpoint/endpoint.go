package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// ErrForbidden reports a link-local or cloud metadata address.
var ErrForbidden = errors.New("endpoint: link-local or metadata address")

var (
	linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	metadata   = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"),   // AWS instance metadata over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud metadata
	}
)

// Forbidden reports whether a store may never be reached at addr: a
// link-local address (unicast or multicast) or a cloud metadata address.
func Forbidden(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	if linkLocal4.Contains(addr) || linkLocal6.Contains(addr) || addr.IsLinkLocalMulticast() {
		return true
	}
	for _, m := range metadata {
		if addr == m {
			return true
		}
	}
	return false
}

// Loopback reports whether host (without port) is "localhost" or a
// loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Check returns what is wrong with a store's endpoint URL, or nil.
// allowInsecure is the store's allowInsecureEndpoint: plain http to a host
// that is not loopback (an emulator elsewhere on the network).
func Check(raw string, allowInsecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q is not an http(s) URL", raw)
	}
	if u.User != nil {
		return errors.New("endpoint must not carry credentials")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil && Forbidden(a) {
		return fmt.Errorf("endpoint %q: %s is a link-local or metadata address", raw, host)
	}
	if u.Scheme == "http" && !allowInsecure && !Loopback(host) {
		return fmt.Errorf("endpoint %q is plain http: use https (http is allowed only to a loopback host, or with \"allowInsecureEndpoint\": true for an emulator)", raw)
	}
	return nil
}

// awsDomains are the DNS suffixes of AWS service endpoints.
var awsDomains = []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"}

// AWS reports whether raw is an AWS endpoint: https to a host under one of
// AWS's service domains (regional, dual-stack, FIPS and VPC interface
// endpoints among them).
func AWS(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range awsDomains {
		if strings.HasSuffix(host, d) {
			return true
		}
	}
	return false
}

// Control is a net.Dialer Control function that refuses to connect to a
// Forbidden address. It runs after name resolution, on the address about
// to be dialled.
func Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("endpoint: dial %s %s: %w", network, address, err)
	}
	if Forbidden(ap.Addr()) {
		return fmt.Errorf("%w: refusing to connect to %s", ErrForbidden, address)
	}
	return nil
}

// MaxIdleConnsPerHost is how many idle connections Mill's SDK clients keep
// to one endpoint (the SDK's default is 10): enough for a Workman's
// concurrent SQS requests and a transfer's parallel streams, whose
// connections past the pool's size were closed after each request and
// dialled again for the next.
const MaxIdleConnsPerHost = 64

// HTTPClient returns an SDK HTTP client (with the SDK's defaults, and a
// pool of MaxIdleConnsPerHost idle connections a host) whose
// connections never reach a Forbidden address: its dialer's Control checks
// each address dialled, and when a proxy is in use the endpoint's host is
// resolved and checked before the request is handed to the proxy. resolver
// resolves host names (nil: the default resolver).
func HTTPClient(resolver *net.Resolver) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Control = Control
			d.Resolver = resolver
		}).
		WithTransportOptions(func(t *http.Transport) {
			t.Proxy = guardProxy(t.Proxy, resolver)
			t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
			t.MaxIdleConns = 2 * MaxIdleConnsPerHost
		})
}

// guardProxy wraps a transport's Proxy function: the dialer then sees only
// the proxy's address, so the endpoint's own addresses are checked here.
func guardProxy(next func(*http.Request) (*url.URL, error), r *net.Resolver) func(*http.Request) (*url.URL, error) {
	if next == nil {
		return nil
	}
	return func(req *http.Request) (*url.URL, error) {
		p, err := next(req)
		if p == nil || err != nil {
			return p, err
		}
		if err := checkHost(req.Context(), r, req.URL.Hostname()); err != nil {
			return nil, err
		}
		return p, nil
	}
}

// checkHost refuses a host that is, or resolves to, a Forbidden address.
func checkHost(ctx context.Context, r *net.Resolver, host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if Forbidden(a) {
			return fmt.Errorf("%w: refusing to connect to %s", ErrForbidden, host)
		}
		return nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("endpoint: resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if Forbidden(a) {
			return fmt.Errorf("%w: %s resolves to %s; refusing to connect", ErrForbidden, host, a)
		}
	}
	return nil
}
