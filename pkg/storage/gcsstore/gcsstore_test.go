package gcsstore

import (
	"bytes"
	"context"
	"io"
	"testing"

	gcs "cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

// Small sizes so the suite's large items (11 MiB) take the resumable
// upload path in chunks.
var testConfig = Config{Threshold: 1 << 20, ChunkSize: 1 << 20}

// fakeGCS starts fake-gcs-server in this process, listening on loopback
// over plain HTTP, with one bucket, and returns a client of it.
func fakeGCS(t testing.TB) (*gcs.Client, string) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatalf("start fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	testenv.RequireLoopback(t, "fake-gcs-server", srv.URL())
	bucket := "mill-test"
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	client, err := gcs.NewClient(context.Background(), option.WithEndpoint(srv.URL()+"/storage/v1/"), option.WithoutAuthentication(), gcs.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, bucket
}

func TestConformance(t *testing.T) {
	client, bucket := fakeGCS(t)
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
				key, _ := s.contentKey(space, id)
				ctx := t.Context()
				o := client.Bucket(bucket).Object(key)
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
