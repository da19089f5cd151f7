package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/millfleet/mill/internal/app/console/auth"
)

// loopbackNames are the host names the console answers to by default under
// the "none" mode, with the port the request arrived on.
var loopbackNames = []string{"localhost", "127.0.0.1", "[::1]"}

// ParseAllowedHosts reads allowed hosts: each "host" or "host:port" as a
// browser sends it in the Host and Origin headers (an IPv6 address in
// brackets; no port when it is the scheme's default), compared exactly and
// case-insensitively. Entries may be comma-separated; empty ones are
// skipped. A scheme, a path, a wildcard or a malformed port is refused.
func ParseAllowedHosts(entries ...string) ([]string, error) {
	var out, bad []string
	for _, e := range entries {
		for _, h := range strings.Split(e, ",") {
			h = strings.ToLower(strings.TrimSpace(h))
			if h == "" {
				continue
			}
			if err := checkHostEntry(h); err != nil {
				bad = append(bad, err.Error())
				continue
			}
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("console: allowed hosts: %s", strings.Join(bad, "; "))
	}
	return out, nil
}

func checkHostEntry(h string) error {
	u, err := url.Parse("http://" + h)
	if err != nil || u.Host != h || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(h, "*/\\@ ") || u.Hostname() == "" {
		return fmt.Errorf("%q: want host or host:port (an IPv6 address in brackets), no scheme, path or wildcard", h)
	}
	if p := u.Port(); p != "" || strings.HasSuffix(h, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: the port must be 1 to 65535", h)
		}
	}
	if strings.Contains(u.Hostname(), ":") && !strings.HasPrefix(h, "[") {
		return fmt.Errorf("%q: write an IPv6 address in brackets", h)
	}
	return nil
}

// loopbackHost reports whether an allowed-host entry names this machine
// only: localhost or a loopback address.
func loopbackHost(h string) bool {
	u, err := url.Parse("http://" + h)
	if err != nil {
		return false
	}
	name := u.Hostname()
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// CheckAllowedHosts checks allowed hosts (ParseAllowedHosts) and refuses,
// under the "none" mode, one that is not a loopback name: a page of that
// name would be served, as an admin, to whoever's browser reaches it.
func CheckAllowedHosts(hosts []string, a auth.Authenticator) error {
	parsed, err := ParseAllowedHosts(hosts...)
	if err != nil {
		return err
	}
	if a.Mode() != "none" {
		return nil
	}
	var bad []string
	for _, h := range parsed {
		if !loopbackHost(h) {
			bad = append(bad, h)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("console: --auth none answers loopback names only (localhost, 127.0.0.1, [::1]); refused allowed hosts %q — use --auth tokens or --auth alb", bad)
	}
	return nil
}

// hostPolicy decides which Host (and Origin) names a console answers to.
type hostPolicy struct {
	// explicit is Config.AllowedHosts. loopback: none given, under the
	// "none" mode — the loopback names with the port the request arrived
	// on. Neither: any Host is answered, and an Origin must name the
	// request's Host.
	explicit []string
	loopback bool
}

func newHostPolicy(hosts []string, a auth.Authenticator) hostPolicy {
	h, _ := ParseAllowedHosts(hosts...) // validated by Config.validate
	return hostPolicy{explicit: h, loopback: len(h) == 0 && a.Mode() == "none"}
}

// restricted reports whether the policy names its hosts (otherwise any
// Host is answered).
func (p hostPolicy) restricted() bool { return len(p.explicit) > 0 || p.loopback }

// allowed returns the hosts r may name, or nil when any is answered.
func (p hostPolicy) allowed(r *http.Request) []string {
	if len(p.explicit) > 0 {
		return p.explicit
	}
	if !p.loopback {
		return nil
	}
	port := ""
	out := make([]string, 0, 2*len(loopbackNames)+1)
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		var ip string
		ip, port, _ = net.SplitHostPort(a.String())
		// The loopback address served on, when it is another (127.0.0.2).
		if addr := net.ParseIP(ip); addr != nil && addr.IsLoopback() && !addr.Equal(net.IPv4(127, 0, 0, 1)) && !addr.Equal(net.IPv6loopback) {
			out = append(out, strings.ToLower(net.JoinHostPort(ip, port)))
		}
	}
	for _, n := range loopbackNames {
		if port != "" {
			out = append(out, n+":"+port)
		}
		if port == "" || port == "80" { // a browser leaves out the default port
			out = append(out, n)
		}
	}
	return out
}

// hostAllowed reports whether host (a Host header, or an Origin's host) is
// one r may name.
func (p hostPolicy) hostAllowed(r *http.Request, host string) bool {
	host = strings.ToLower(host)
	if !p.restricted() {
		return host == strings.ToLower(r.Host)
	}
	return host != "" && slices.Contains(p.allowed(r), host)
}

// Hosts describes the hosts answered when serving on addr (the
// listener's address), for the startup line.
func (s *Server) Hosts(addr net.Addr) string {
	switch {
	case len(s.hosts.explicit) > 0:
		return strings.Join(s.hosts.explicit, ", ")
	case s.hosts.loopback:
		r := (&http.Request{}).WithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, addr))
		return strings.Join(s.hosts.allowed(r), ", ")
	}
	return "any"
}

// checkHost refuses a request whose Host is not allowed, before anything
// else reads it: under the "none" mode a page whose name was rebound to
// 127.0.0.1 would otherwise be served, and post, as the local admin. The
// answer is 421 with one line of text, no page. /healthz answers any Host
// (load balancers' health checks name the task's address).
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hosts.restricted() && r.URL.Path != "/healthz" && !s.hosts.hostAllowed(r, r.Host) {
			s.cfg.Logger.Warn("console: request for a host not allowed refused", "host", r.Host, "method", r.Method,
				"path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = w.Write([]byte("421 misdirected request: this console does not answer to that host name\n"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// errCrossOrigin is why checkOrigin refused.
var errCrossOrigin = errors.New("cross-origin")

// originProblem says why a state-changing request is refused as
// cross-origin, or returns nil: Sec-Fetch-Site must be same-origin (or
// none: typed by the user); the Origin, or without one the Referer, must
// name an allowed host (not merely the request's Host, which a rebound
// name controls). A request without any of them is not from a browser.
func (s *Server) originProblem(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
		return fmt.Errorf("%w: Sec-Fetch-Site %q", errCrossOrigin, sfs)
	}
	check := func(hdr, v string, path bool) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(!path && (u.Path != "" || u.RawQuery != "")) {
			return fmt.Errorf("%w: %s %q is not an http(s) origin", errCrossOrigin, hdr, v)
		}
		if !s.hosts.hostAllowed(r, u.Host) {
			return fmt.Errorf("%w: %s %q names a host not allowed", errCrossOrigin, hdr, v)
		}
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		return check("Origin", o, false)
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return check("Referer", ref, true)
	}
	return nil
}

// checkOrigin refuses state-changing requests from other origins (see
// originProblem), then passes the rest through Go's
// http.CrossOriginProtection as well, which trusts the allowed hosts'
// origins.
func (s *Server) checkOrigin(h http.Handler) http.Handler {
	deny := func(w http.ResponseWriter, r *http.Request, why string) {
		s.cfg.Logger.Warn("console: cross-origin request refused", "method", r.Method, "path", r.URL.Path, "why", why,
			"origin", r.Header.Get("Origin"), "referer", r.Header.Get("Referer"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		s.errorPage(w, r, nil, http.StatusForbidden, "Cross-origin request refused",
			"This request came from another site. Changes can only be made from the console's own pages.")
	}
	cop := http.NewCrossOriginProtection()
	for _, host := range s.hosts.explicit {
		for _, scheme := range []string{"http://", "https://"} {
			_ = cop.AddTrustedOrigin(scheme + host) // validated entries
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { deny(w, r, "http.CrossOriginProtection") }))
	next := cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.originProblem(r); err != nil {
			deny(w, r, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}
