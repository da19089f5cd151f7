package console_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
)

// TestAllowedHosts: an explicit list replaces the default; the Origin (or
// the Referer) must name one of them, not merely the request's Host — a
// reverse proxy that does not pass the Host on is served.
func TestAllowedHosts(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.AllowedHosts = []string{"console.example.org, proxy.internal:8080"} })
	if resp, _ := e.send("GET", "/policies", "evil.example", nil, "Authorization", "Bearer "+e.admin); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a host not listed: %d", resp.StatusCode)
	}
	if resp, _ := e.send("GET", "/policies", "console.example.org:8443", nil, "Authorization", "Bearer "+e.admin); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a listed name on a port not listed: %d", resp.StatusCode)
	}
	if resp, _ := e.send("GET", "/policies", "Console.Example.org", nil, "Authorization", "Bearer "+e.admin); resp.StatusCode != 200 {
		t.Errorf("a listed host: %d", resp.StatusCode)
	}
	post := func(host string, hdr ...string) int {
		resp, _ := e.send("POST", "/policies/acme/listed", host, strings.NewReader("listed=true"),
			append([]string{"Content-Type", "application/x-www-form-urlencoded", "Authorization", "Bearer " + e.admin}, hdr...)...)
		return resp.StatusCode
	}
	if st := post("proxy.internal:8080", "Origin", "https://console.example.org"); st != http.StatusSeeOther {
		t.Errorf("behind a proxy, from the console's page: %d", st)
	}
	if st := post("proxy.internal:8080", "Referer", "https://console.example.org/policies"); st != http.StatusSeeOther {
		t.Errorf("behind a proxy, Referer only: %d", st)
	}
	if st := post("console.example.org", "Origin", "https://evil.example"); st != http.StatusForbidden {
		t.Errorf("from another site: %d", st)
	}
	if st := post("console.example.org", "Referer", "https://evil.example/x"); st != http.StatusForbidden {
		t.Errorf("from another site, Referer only: %d", st)
	}

	// Without a list, outside the none mode, any Host is answered (the
	// token, not the network, authenticates) and the Origin must match it.
	d := newEnv(t)
	if resp, _ := d.send("GET", "/policies", "console.example.org", nil, "Authorization", "Bearer "+d.admin); resp.StatusCode != 200 {
		t.Errorf("tokens mode, no list: %d", resp.StatusCode)
	}
	if resp, _ := d.send("POST", "/policies/acme/listed", "console.example.org", strings.NewReader("listed=false"), "Content-Type", "application/x-www-form-urlencoded",
		"Authorization", "Bearer "+d.admin, "Referer", "https://evil.example/"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("tokens mode, a foreign Referer: %d", resp.StatusCode)
	}
	if l := d.listed(); len(l) != 1 {
		t.Errorf("listed %v", l)
	}
}

func TestAllowedHostsChecked(t *testing.T) {
	none := auth.Anonymous{Role: auth.RoleAdmin}
	for _, ok := range [][]string{nil, {"localhost:8080", "127.0.0.1:8080", "[::1]:8080"}, {"localhost,127.0.0.2:80"}, {"LOCALHOST"}} {
		if err := console.CheckAllowedHosts(ok, none); err != nil {
			t.Errorf("%q under none: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"console.example.org"}, {"localhost:8080", "10.0.0.5:8080"}, {"0.0.0.0:8080"}, {"localhost.evil.example"}, {"[::]:80"}} {
		if err := console.CheckAllowedHosts(bad, none); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%q under none: %v", bad, err)
		}
	}
	tk := &auth.Tokens{}
	for _, bad := range []string{"http://console.example.org", "console.example.org/x", "*.example.org", "::1", "h:0", "h:99999", "h:", "a b", "user@h", ":8080"} {
		if err := console.CheckAllowedHosts([]string{bad}, tk); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := console.CheckAllowedHosts([]string{"console.example.org", "10.0.0.5:8080", "[fd00::1]:443"}, tk); err != nil {
		t.Error(err)
	}
	e := newEnv(t)
	if _, err := console.New(console.Config{Auth: none, Files: e.files, Changes: e.changes, Queues: e.console.QueuesForTest(),
		AllowedHosts: []string{"console.example.org"}}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("New with --auth none and a public name: %v", err)
	}
}

// TestLoopbackAddressServed: under --auth none on another loopback address
// (127.0.0.2), that address is answered too, and the loopback names.
func TestLoopbackAddressServed(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.Auth = auth.Anonymous{Role: auth.RoleAdmin} })
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e.console.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for host, want := range map[string]int{"127.0.0.2:" + port: 200, "localhost:" + port: 200, "127.0.0.3:" + port: http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest("GET", srv.URL+"/policies", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s on 127.0.0.2: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
