package awsconfig

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Two waves of 30 concurrent requests to one endpoint reuse the first
// wave's connections: the second dials none. With the SDK's default pool
// (10 idle connections a host) the second wave dialled 20 again.
func TestLoadKeepsConnectionsForConcurrentRequests(t *testing.T) {
	const concurrent = 30
	var dials atomic.Int64
	arrived := make(chan struct{}, concurrent)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	c, err := Load(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wave := func() {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				resp, err := c.AWS.HTTPClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		// Every request is in flight at once before any is answered.
		for range concurrent {
			<-arrived
		}
		for range concurrent {
			release <- struct{}{}
		}
		wg.Wait()
	}
	wave()
	first := dials.Load()
	wave()
	if again := dials.Load() - first; again != 0 {
		t.Errorf("the second wave of %d concurrent requests dialled %d new connections (the first dialled %d); want 0", concurrent, again, first)
	}
}
