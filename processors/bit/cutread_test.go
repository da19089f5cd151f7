package bit

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// cutting is an S3 store whose first cuts ranged reads break halfway
// through their body, as a connection reset mid-response does.
type cutting struct {
	*s3store.Store
	cuts atomic.Int32
}

func (c *cutting) GetRange(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *storage.Info, error) {
	rc, info, err := c.Store.GetRange(ctx, space, id, off, n, revision)
	if err != nil || c.cuts.Add(-1) < 0 {
		return rc, info, err
	}
	return &brokenBody{rc: rc, left: min(n, info.Size-off) / 2}, info, nil
}

type brokenBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *brokenBody) Close() error { return b.rc.Close() }

// TestReadOnAfterBrokenBody: a check whose ranged reads break mid-body
// (three of them, in the first read and in the reads on) hashes the item
// exactly, reading on from its hash with reads pinned to the revision —
// not failing the check; past maxReadOns breaks the error is the check's.
func TestReadOnAfterBrokenBody(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.S3()
	ctx := t.Context()
	bucket := testenv.Prefix(t) + "cut"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	s3p, err := s3store.New(client, s3store.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3p.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	const part = 1 << 20
	data := make([]byte, 3*part+77)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := s3p.Put(ctx, "s", "item", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	truth := storage.NewSums()
	truth.Write(data)
	prov := &cutting{Store: s3p}
	ob := &Observer{ReadSettings: ReadSettings{Transfer: storage.Transfer{Streams: 1, PartSize: part}}}
	for _, read := range []struct {
		name string
		fn   func() (*storage.Info, *storage.Sums, error)
	}{
		{"read", func() (*storage.Info, *storage.Sums, error) { return ob.read(ctx, prov, "s", "item", "") }},
		{"re-read", func() (*storage.Info, *storage.Sums, error) {
			info, err := s3p.Head(ctx, "s", "item")
			if err != nil {
				return nil, nil, err
			}
			return ob.reread(ctx, prov, "s", "item", info.Revision)
		}},
	} {
		prov.cuts.Store(3)
		info, sums, err := read.fn()
		if err != nil {
			t.Fatalf("%s with 3 broken bodies: %v", read.name, err)
		}
		if info.Size != int64(len(data)) || sums.Len() != int64(len(data)) || sums.MD5() != truth.MD5() {
			t.Errorf("%s: hashed %d bytes to %s, want %d to %s", read.name, sums.Len(), sums.MD5(), len(data), truth.MD5())
		}
		prov.cuts.Store(maxReadOns + 1)
		if _, _, err := read.fn(); err == nil {
			t.Errorf("%s: %d broken bodies in a row did not fail the read", read.name, maxReadOns+1)
		}
	}
}
