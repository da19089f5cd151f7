package bit_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// countingHTTP records every request an S3 client sends, as method and
// path (path-style: /bucket/key).
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

// TestBitSmallItemS3Requests: a BIT task of a small item on an S3 store,
// with checkpoints in a state bucket at the default thresholds, makes
// exactly one S3 request — the item's GET — and none to the checkpoints
// (the state bucket's transfers/ prefix); the item is recorded healthy.
func TestBitSmallItemS3Requests(t *testing.T) {
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
	e := bt.New(t)
	e.Wrap("1", func(storage.Provider) storage.Provider { return prov })
	healthy(e, false)
	p := e.Processor(func(c *bit.Config) {
		c.Checkpoints = s3store.NewCheckpoints(client, state, "transfers/")
	})
	counter.take()
	if err := p.Handle(ctx, bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	reqs := counter.take()
	for _, r := range reqs {
		if strings.Contains(r, " /"+state) || strings.Contains(r, "/transfers/") {
			t.Errorf("request to the checkpoints: %s", r)
		}
	}
	if want := "GET /" + data + "/" + bt.Space + "/" + bt.Item; len(reqs) != 1 || reqs[0] != want {
		t.Errorf("S3 requests of the BIT task: %q; want exactly [%q]", reqs, want)
	}
	if row := e.Row(); row == nil || row.Result != bitlog.ResultSuccess {
		t.Errorf("bit log row %+v, want SUCCESS", row)
	}
}
