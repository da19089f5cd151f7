package console_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
)

// send sends a request with the Host header host ("" leaves the server's
// address) and the headers hdr (name, value…), without following
// redirects.
func (e *env) send(method, path, host string, body io.Reader, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (e *env) port() string {
	_, p, err := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestDNSRebindingRefused: under --auth none a page whose name was rebound
// to 127.0.0.1 reads nothing and changes nothing: its Host is not a
// loopback name on the console's port, so the console answers 421 before
// any page; the loopback names are served.
func TestDNSRebindingRefused(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.Auth = auth.Anonymous{Role: auth.RoleAdmin} })
	p := e.port()
	for _, host := range []string{"evil.example:" + p, "evil.example", "localhost:1" + p, "0.0.0.0:" + p, "127.0.0.1.nip.io:" + p,
		"localhost.:" + p, "LOCALHOST.evil.example:" + p} {
		for _, path := range []string{"/policies", "/policies/acme", "/bit", "/changes", "/assets/console.css"} {
			resp, body := e.send("GET", path, host, nil)
			if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "acme") || strings.Contains(body, "<html") {
				t.Errorf("GET %s with Host %q: %d %.80q", path, host, resp.StatusCode, body)
			}
		}
		// The rebound page posts as the browser would: same-origin for it.
		resp, _ := e.send("POST", "/policies/acme/listed", host, strings.NewReader("listed=false"),
			"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://"+host, "Sec-Fetch-Site", "same-origin")
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("POST with Host %q: %d", host, resp.StatusCode)
		}
	}
	if l := e.listed(); len(l) != 1 || l[0] != "acme" {
		t.Fatalf("a rebound page unlisted the account: %v", l)
	}
	for _, host := range []string{"127.0.0.1:" + p, "localhost:" + p, "[::1]:" + p, "LocalHost:" + p} {
		if resp, body := e.send("GET", "/policies", host, nil); resp.StatusCode != 200 || !strings.Contains(body, "acme") {
			t.Errorf("GET with Host %q: %d", host, resp.StatusCode)
		}
	}
	// /healthz answers any Host (a load balancer's health check).
	if resp, _ := e.send("GET", "/healthz", "10.0.0.7:"+p, nil); resp.StatusCode != 200 {
		t.Errorf("/healthz with another Host: %d", resp.StatusCode)
	}
	// A loopback page may post; one on another port or name may not, nor
	// may a page elsewhere named by its Referer alone.
	post := func(hdr ...string) int {
		resp, _ := e.send("POST", "/policies/acme/listed", "127.0.0.1:"+p, strings.NewReader("listed=true"),
			append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)...)
		return resp.StatusCode
	}
	if st := post("Origin", "http://127.0.0.1:"+p, "Sec-Fetch-Site", "same-origin"); st != http.StatusSeeOther {
		t.Errorf("same-origin POST: %d", st)
	}
	for name, hdr := range map[string][]string{
		"another port":     {"Origin", "http://127.0.0.1:1" + p},
		"another name":     {"Origin", "http://evil.example:" + p},
		"null origin":      {"Origin", "null"},
		"foreign referer":  {"Referer", "http://evil.example:" + p + "/attack"},
		"same-site":        {"Sec-Fetch-Site", "same-site", "Origin", "http://localhost:3000"},
		"origin with path": {"Origin", "http://127.0.0.1:" + p + "/x"},
	} {
		if st := post(hdr...); st != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, st)
		}
	}
}
