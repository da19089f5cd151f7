package bit

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// countingHTTP counts every request an S3 client sends, by method, bucket
// and key (path-style: /bucket/key).
type countingHTTP struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu   sync.Mutex
	reqs []string
}

func (c *countingHTTP) Do(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.inner.Do(r)
}

func (c *countingHTTP) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reqs
	c.reqs = nil
	return r
}

// TestReadSmallItemS3Requests: on an S3 store with checkpoints in a
// state bucket, at the default thresholds, the read of a BIT check of a
// small item is exactly one S3 request — the item's GET — and none goes
// to the checkpoints' prefix (transfers/).
func TestReadSmallItemS3Requests(t *testing.T) {
	cfg := testenv.AWS(t)
	counter := &countingHTTP{}
	client := cfg.S3(func(o *s3.Options) {
		counter.inner = o.HTTPClient
		o.HTTPClient = counter
		o.UsePathStyle = true
	})
	ctx := t.Context()
	data, state := testenv.Prefix(t)+"rcdata", testenv.Prefix(t)+"rcstate"
	for _, b := range []string{data, state} {
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, client, b)
	}
	prov, err := s3store.New(client, s3store.Config{Bucket: data})
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("small item "), 1000)
	if _, err := prov.Put(ctx, "s", "item", bytes.NewReader(body), storage.PutOptions{Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	ob := &Observer{ReadSettings: ReadSettings{Checkpoints: s3store.NewCheckpoints(client, state, "transfers/")}}
	counter.take()
	info, sums, err := ob.read(ctx, prov, "s", "item", storage.CheckpointKey("bit", "acct", "store", "s", "item", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(body)) || sums.Len() != int64(len(body)) {
		t.Fatalf("read %d of %d bytes, want %d", sums.Len(), info.Size, len(body))
	}
	reqs := counter.take()
	gets := 0
	for _, r := range reqs {
		if strings.Contains(r, " /"+state) || strings.Contains(r, "/transfers/") {
			t.Errorf("request to the checkpoints: %s", r)
		}
		if strings.HasPrefix(r, "GET /"+data+"/") {
			gets++
		}
	}
	if len(reqs) != 1 || gets != 1 {
		t.Errorf("S3 requests of the read: %q; want exactly one GET of the item", reqs)
	}
}
