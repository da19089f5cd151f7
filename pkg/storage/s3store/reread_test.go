package s3store

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/storage"
)

// TestReopenPinsTheRevision: storage.Reopen reads the object again, and
// only the revision it names: ErrChanged once the object was rewritten.
func TestReopenPinsTheRevision(t *testing.T) {
	client, bucket := setupBucket(t)
	st, err := New(client, Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := st.CreateSpace(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("reread me ", 100))
	if _, err := st.Put(ctx, "sp", "a", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	rc, info, err := storage.Open(ctx, st, "sp", "a", storage.Transfer{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got := readAll(t)(storage.Reopen(ctx, st, "sp", "a", info.Revision, storage.Transfer{})); !bytes.Equal(got, data) {
		t.Fatalf("reopen read %q; want the bytes written", got)
	}
	other := []byte("rewritten")
	if _, err := st.Put(ctx, "sp", "a", bytes.NewReader(other), storage.PutOptions{Size: int64(len(other))}); err != nil {
		t.Fatal(err)
	}
	if rc, _, err := storage.Reopen(ctx, st, "sp", "a", info.Revision, storage.Transfer{}); !errors.Is(err, storage.ErrChanged) {
		if rc != nil {
			rc.Close()
		}
		t.Fatalf("reopen of the old revision of a rewritten object: %v; want ErrChanged", err)
	}
}

func readAll(t *testing.T) func(io.ReadCloser, *storage.Info, error) []byte {
	return func(rc io.ReadCloser, _ *storage.Info, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestNewConnectionDialsItsOwn: reads under storage.WithNewConnection each
// dial a connection of their own and leave the client's pool alone, while
// ordinary requests reuse the pooled connection. (The emulator closes
// every connection after its response, so a local server that keeps them
// stands in for S3 here.)
func TestNewConnectionDialsItsOwn(t *testing.T) {
	data := []byte("the object's bytes")
	sum := md5.Sum(data)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		if r.Method == http.MethodHead {
			return
		}
		if r.Header.Get("Range") != "" {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)))
			w.WriteHeader(http.StatusPartialContent)
		}
		w.Write(data)
	}))
	var dialled atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:  awshttp.NewBuildableClient(),
	})
	st, err := New(client, Config{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	dials := func(what string, want int64, f func()) {
		t.Helper()
		before := dialled.Load()
		f()
		if n := dialled.Load() - before; n != want {
			t.Fatalf("%s dialled %d connections; want %d", what, n, want)
		}
	}
	head := func() {
		if _, err := st.Head(ctx, "sp", "a"); err != nil {
			t.Fatal(err)
		}
	}
	dials("the first HEAD", 1, head)
	dials("a HEAD after a HEAD", 0, head)
	dials("an ordinary GET", 0, func() {
		if got := readAll(t)(st.Get(ctx, "sp", "a")); !bytes.Equal(got, data) {
			t.Fatalf("got %q", got)
		}
	})
	for i := range 2 {
		dials(fmt.Sprintf("reopen %d", i), 1, func() {
			if got := readAll(t)(storage.Reopen(ctx, st, "sp", "a", etag, storage.Transfer{})); !bytes.Equal(got, data) {
				t.Fatalf("got %q", got)
			}
		})
		dials("a HEAD after a reopen", 0, head)
	}
	dials("a GET under WithNewConnection", 1, func() {
		if got := readAll(t)(st.Get(storage.WithNewConnection(ctx), "sp", "a")); !bytes.Equal(got, data) {
			t.Fatalf("got %q", got)
		}
	})
}

// TestNewConnectionClients: the SDK's buildable client is copied with a
// pool of its own (a new *BuildableClient); any other client gets its
// requests marked Connection: close.
func TestNewConnectionClients(t *testing.T) {
	bc := awshttp.NewBuildableClient()
	o := s3.Options{HTTPClient: bc}
	newConnection(&o)
	if c, ok := o.HTTPClient.(*awshttp.BuildableClient); !ok || c == bc {
		t.Fatalf("buildable client: %T %p; want a copy of %p", o.HTTPClient, o.HTTPClient, bc)
	}
	var closed bool
	o = s3.Options{HTTPClient: doFunc(func(r *http.Request) (*http.Response, error) {
		closed = r.Close
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})}
	newConnection(&o)
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	if _, err := o.HTTPClient.Do(req); err != nil || !closed {
		t.Fatalf("other client: Do %v, Close %v; want the request marked Connection: close", err, closed)
	}
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
