package testenv

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	gcs "cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// GCSEmulatorVar names the variable holding the fake-gcs-server endpoint
// that `make up` starts (localstack/env.sh sets it).
const GCSEmulatorVar = "MILL_GCS_EMULATOR_URL"

// FakeGCS starts fake-gcs-server inside the test process, listening on
// loopback over plain HTTP, and returns its endpoint; it stops with the
// test.
func FakeGCS(t testing.TB) string {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatalf("start fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	RequireLoopback(t, "fake-gcs-server", srv.URL())
	return srv.URL()
}

// GCSEmulator returns the endpoint of the fake-gcs-server `make up`
// started (GCSEmulatorVar, default http://127.0.0.1:4443), failing (CI)
// or skipping the test when nothing answers.
func GCSEmulator(t testing.TB) string {
	t.Helper()
	integration(t)
	ep := strings.TrimSuffix(os.Getenv(GCSEmulatorVar), "/")
	if ep == "" {
		ep = "http://127.0.0.1:4443"
	}
	RequireLoopback(t, GCSEmulatorVar, ep)
	if err := probe(ep); err != nil {
		Unavailable(t, "fake-gcs-server (GCS emulator) at "+ep, err)
	}
	return ep
}

// GCSClient returns a client of the GCS emulator at ep (anonymous, JSON
// API), closed after the test: Google's cloud.google.com/go/storage, not
// Mill's gcsstore, so a test can act as another tool writing the bucket.
func GCSClient(t testing.TB, ep string) *gcs.Client {
	t.Helper()
	c, err := gcs.NewClient(context.Background(), option.WithEndpoint(strings.TrimSuffix(ep, "/")+"/storage/v1/"),
		option.WithoutAuthentication(), gcs.WithJSONReads())
	if err != nil {
		t.Fatalf("GCS client of %s: %v", ep, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// GCSBucket creates a fresh bucket through c, removed with its objects
// after the test.
func GCSBucket(t testing.TB, c *gcs.Client) string {
	t.Helper()
	name := Prefix(t) + "store"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Bucket(name).Create(ctx, "mill-test", nil); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b := c.Bucket(name)
		it := b.Objects(ctx, nil)
		for {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				t.Errorf("empty bucket %s: %v", name, err)
				return
			}
			_ = b.Object(a.Name).Delete(ctx)
		}
		if err := b.Delete(ctx); err != nil {
			t.Errorf("delete bucket %s: %v", name, err)
		}
	})
	return name
}
