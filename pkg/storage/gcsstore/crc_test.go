package gcsstore

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
)

// TestWholeReadChecksCRC32C: a byte changed on the wire in a whole read
// fails the read (the store checks GCS's CRC32C of the object);
// the bytes never reach the caller as the item's.
func TestWholeReadChecksCRC32C(t *testing.T) {
	target, err := url.Parse(testenv.FakeGCS(t))
	if err != nil {
		t.Fatal(err)
	}
	var flip atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if !flip.Load() || r.Request.URL.Query().Get("alt") != "media" {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		b[0] ^= 1
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	c := emulatorClient(t, srv.URL)
	s, err := New(c, Config{Bucket: testenv.GCSBucket(t, testenv.GCSClient(t, srv.URL))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateSpace(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	data := "bytes GCS holds a CRC32C of"
	if _, err := s.Put(ctx, "sp", "item", strings.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	flip.Store(true)
	rc, _, err := s.Get(ctx, "sp", "item")
	if err == nil {
		b, rerr := io.ReadAll(rc)
		rc.Close()
		if rerr == nil {
			t.Fatalf("a whole read of bytes changed on the wire returned %q and no error", b)
		}
		if !strings.Contains(rerr.Error(), "CRC") {
			t.Errorf("read error %v, want the CRC32C mismatch", rerr)
		}
	}
}
