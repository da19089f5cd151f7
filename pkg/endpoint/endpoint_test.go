package endpoint_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/millfleet/mill/pkg/endpoint"
)

func TestForbidden(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254":        true,
		"169.254.170.2":          true, // ECS task metadata
		"169.254.0.1":            true,
		"::ffff:169.254.169.254": true,
		"64:ff9b::a9fe:a9fe":     true, // NAT64 of 169.254.169.254
		"fe80::1":                true,
		"fe80::1%eth0":           true,
		"fd00:ec2::254":          true,
		"100.100.100.200":        true,
		"224.0.0.251":            true, // link-local multicast
		"127.0.0.1":              false,
		"::1":                    false,
		"10.0.0.5":               false,
		"52.216.0.1":             false,
		"fd00:ec2::253":          false,
		"2600:1f18:4000::1":      false,
		"169.255.0.1":            false,
		"::ffff:127.0.0.1":       false,
	} {
		if got := endpoint.Forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		url      string
		insecure bool
		want     string // "" = accepted; else a fragment of the error
	}{
		{"https://s3.example.org", false, ""},
		{"https://s3.eu-west-1.amazonaws.com", false, ""},
		{"http://127.0.0.1:4566", false, ""},
		{"http://localhost:4566", false, ""},
		{"http://[::1]:9000", false, ""},
		{"http://minio.internal:9000", true, ""},
		{"http://minio.internal:9000", false, "is plain http"},
		{"http://s3.example.org", false, "is plain http"},
		{"http://169.254.169.254/", false, "link-local or metadata"},
		{"http://169.254.169.254/", true, "link-local or metadata"},
		{"https://169.254.169.254/", false, "link-local or metadata"},
		{"https://[fd00:ec2::254]/", false, "link-local or metadata"},
		{"https://[fe80::1%25eth0]:443/", false, "link-local or metadata"},
		{"https://u:p@s3.example.org", false, "must not carry credentials"},
		{"ftp://s3.example.org", false, "not an http(s) URL"},
		{"s3.example.org", false, "not an http(s) URL"},
		{"https://", false, "not an http(s) URL"},
	} {
		err := endpoint.Check(c.url, c.insecure)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%q, %v) = %v, want nil", c.url, c.insecure, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Check(%q, %v) = %v, want %q", c.url, c.insecure, err, c.want)
		}
	}
}

func TestAWS(t *testing.T) {
	for u, want := range map[string]bool{
		"https://s3.us-east-1.amazonaws.com":                            true,
		"https://s3.dualstack.eu-west-1.amazonaws.com":                  true,
		"https://s3.cn-north-1.amazonaws.com.cn":                        true,
		"https://s3.us-east-1.api.aws":                                  true,
		"https://bucket.vpce-0a1b-2c3d.s3.us-east-1.vpce.amazonaws.com": true,
		"http://s3.us-east-1.amazonaws.com":                             false,
		"https://s3.example.org":                                        false,
		"https://amazonaws.com.evil.example":                            false,
		"https://evilamazonaws.com":                                     false,
		"http://127.0.0.1:4566":                                         false,
		"https://u:p@s3.amazonaws.com":                                  false,
	} {
		if got := endpoint.AWS(u); got != want {
			t.Errorf("AWS(%s) = %v, want %v", u, got, want)
		}
	}
}

// fakeDNS answers every A query with the address in answer, as a DNS
// server under an attacker's control would, changing its answer between
// lookups (DNS rebinding). AAAA queries get no answer.
type fakeDNS struct {
	answer  atomic.Value // netip.Addr
	lookups atomic.Int64
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go f.serve(server)
		return client, nil
	}}
}

// serve answers DNS over a stream (2-byte length prefixes) until the
// client closes it.
func (f *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		q := make([]byte, n)
		if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
			return
		}
		end := 12
		for end < len(q) && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5 // the root label, QTYPE, QCLASS
		if end > len(q) {
			return
		}
		qtype := binary.BigEndian.Uint16(q[end-4:])
		resp := append([]byte{}, q[:2]...)                      // ID
		resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // response, recursion; 1 question
		resp = append(resp, q[12:end]...)
		if qtype == 1 { // A
			f.lookups.Add(1)
			a := f.answer.Load().(netip.Addr).As4()
			resp[7] = 1 // one answer
			resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
			resp = append(resp, a[:]...)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// TestHTTPClientRefusesRebinding: a host name that resolved to a harmless
// address when first used and to the instance metadata address later is
// refused on the later connection — the check is made on the address
// dialled, not once when the registry was read.
func TestHTTPClientRefusesRebinding(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns := &fakeDNS{}
	dns.answer.Store(netip.MustParseAddr("127.0.0.1"))
	hc := endpoint.HTTPClient(dns.resolver()).WithTransportOptions(func(tr *http.Transport) {
		tr.DisableKeepAlives = true // a new connection per request, as after an idle timeout
		tr.Proxy = nil
	})
	get := func() error {
		req, _ := http.NewRequest(http.MethodGet, "http://s3.rebind.test:"+port+"/bucket/key", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("while the name resolves to 127.0.0.1: %v", err)
	}
	dns.answer.Store(netip.MustParseAddr("169.254.169.254"))
	err := get()
	if !errors.Is(err, endpoint.ErrForbidden) {
		t.Fatalf("after rebinding to 169.254.169.254: %v, want ErrForbidden", err)
	}
	if hits.Load() != 1 || dns.lookups.Load() < 2 {
		t.Fatalf("%d requests reached the server (want 1), %d lookups (want ≥ 2)", hits.Load(), dns.lookups.Load())
	}
}

// A literal metadata address never gets a connection either.
func TestHTTPClientRefusesMetadataAddress(t *testing.T) {
	hc := endpoint.HTTPClient(nil).WithTransportOptions(func(tr *http.Transport) { tr.Proxy = nil })
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/meta-data/"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, endpoint.ErrForbidden) {
			t.Errorf("GET %s: %v, want ErrForbidden", u, err)
		}
	}
}
