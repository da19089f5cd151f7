package gcsstore

import (
	"bytes"
	"io"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

// Small sizes so the suite's large items (11 MiB) take the resumable
// upload path in chunks.
var testConfig = Config{Upload: storage.Upload{Threshold: 1 << 20, Transfer: storage.Transfer{PartSize: 1 << 20}}}

// TestConformance runs the suite on fake-gcs-server inside the test
// process; TestConformanceEmulator on the one `make up` starts.
func TestConformance(t *testing.T) {
	conformance(t, testenv.FakeGCS(t))
}

func TestConformanceEmulator(t *testing.T) {
	conformance(t, testenv.GCSEmulator(t))
}

// emulatorClient is the client the registry's wiring builds for an
// emulator's endpoint.
func emulatorClient(t *testing.T, ep string) *Client {
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: ep, Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// conformance runs the suite on the emulator at ep. Another tool
// (Google's cloud.google.com/go/storage) creates the bucket and corrupts
// or replaces items behind the store's back.
func conformance(t *testing.T, ep string) {
	client := emulatorClient(t, ep)
	other := testenv.GCSClient(t, ep)
	bucket := testenv.GCSBucket(t, other)
	storagetest.Run(t, storagetest.Harness{
		LargeSize:         11 << 20,
		MaxPropertiesSize: MaxMetadataSize,
		New: func(t *testing.T) storagetest.Fixture {
			cfg := testConfig
			cfg.Bucket, cfg.Prefix = bucket, "stores/"+testenv.Unique()+"/"
			s, err := New(client, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rewrite := func(t *testing.T, space, id string, change func([]byte) []byte) {
				key, _ := s.layout.ContentKey(space, id)
				ctx := t.Context()
				o := other.Bucket(bucket).Object(key)
				a, err := o.Attrs(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r, err := o.NewReader(ctx)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r)
				r.Close()
				// Same metadata (the recorded MD5), other bytes: another
				// tool writing the bucket.
				w := o.NewWriter(ctx)
				w.Metadata, w.ContentType = a.Metadata, a.ContentType
				if _, err := io.Copy(w, bytes.NewReader(change(b))); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			return storagetest.Fixture{
				Provider:        s,
				MaxContentIDLen: s.MaxContentIDLen,
				Corrupt: func(t *testing.T, space, id string) {
					rewrite(t, space, id, func(b []byte) []byte { b[0] ^= 1; return b })
				},
				Replace: func(t *testing.T, space, id string, data []byte) {
					rewrite(t, space, id, func([]byte) []byte { return data })
				},
			}
		}})
}
