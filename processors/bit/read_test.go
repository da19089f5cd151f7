package bit

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// TestReadHostileCheckpoint: a read's checkpoint is input. One that does
// not hold for the item as it is now (another revision or size, an offset
// outside it, a hash state of another length, nonsense) is ignored and
// the item read from byte 0; a genuine one is resumed; none is left once
// the read completes.
func TestReadHostileCheckpoint(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.S3()
	ctx := t.Context()
	bucket := testenv.Prefix(t) + "read"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	prov, err := s3store.New(client, s3store.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	const part = 1 << 20
	put := func(seed byte) (*storage.Info, []byte) {
		b := make([]byte, 3*part+77)
		for i := range b {
			b[i] = byte(i*13) ^ seed
		}
		if _, err := prov.Put(ctx, "s", "item", bytes.NewReader(b), storage.PutOptions{Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		info, err := prov.Head(ctx, "s", "item")
		if err != nil || info.Revision == "" {
			t.Fatalf("head: %+v %v", info, err)
		}
		return info, b
	}
	old, oldBytes := put(1)
	info, data := put(2) // the item as it is now
	state := func(b []byte) []byte {
		s := storage.NewSums()
		s.Write(b)
		st, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	truth := storage.NewSums()
	truth.Write(data)

	cps := memblob.New(nil)
	ob := &Observer{ReadSettings: ReadSettings{Transfer: storage.Transfer{Streams: 2, PartSize: part}, Checkpoints: cps, ResumeMinSize: 1, CheckpointEvery: part}}
	const key = "bit/k"
	for _, c := range []struct {
		name string
		cp   any
		// resumed: the checkpoint holds and is used (its hash state is
		// of other bytes, so the sums come out other than the truth).
		resumed bool
	}{
		{"genuine", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size, Offset: part, Sums: state(data[:part])}, false},
		{"genuine, state of other bytes", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size, Offset: part, Sums: state(oldBytes[:part])}, true},
		{"previous revision", readCheckpoint{V: 1, Revision: old.Revision, Size: old.Size, Offset: part, Sums: state(oldBytes[:part])}, false},
		{"other size", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size + 1, Offset: part, Sums: state(oldBytes[:part])}, false},
		{"offset past the end", readCheckpoint{V: 1, Revision: info.Revision, Size: 1 << 40, Offset: 1 << 39, Sums: state(nil)}, false},
		{"negative offset", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size, Offset: -5, Sums: state(nil)}, false},
		{"state of another length", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size, Offset: 2 * part, Sums: state(oldBytes[:part])}, false},
		{"state garbage", readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size, Offset: part, Sums: []byte("nonsense")}, false},
		{"no revision", readCheckpoint{V: 1, Size: info.Size, Offset: part, Sums: state(oldBytes[:part])}, false},
		{"newer version", readCheckpoint{V: 2, Revision: info.Revision, Size: info.Size, Offset: part, Sums: state(oldBytes[:part])}, false},
		{"not JSON", []byte("\x00 not a checkpoint"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, ok := c.cp.([]byte)
			if !ok {
				b, _ = json.Marshal(c.cp)
			}
			if err := cps.Put(ctx, key, b); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			got, sums, err := ob.read(rctx, prov, "s", "item", key)
			if err != nil {
				t.Fatal(err)
			}
			if got.Revision != info.Revision || sums.Len() != int64(len(data)) {
				t.Fatalf("read revision %s, %d bytes; want %s, %d", got.Revision, sums.Len(), info.Revision, len(data))
			}
			same := sums.MD5() == truth.MD5() && sums.CRC64NVME() == truth.CRC64NVME()
			if same == c.resumed {
				t.Errorf("sums %s (truth %s): resumed from the checkpoint = %v, want %v", sums.MD5(), truth.MD5(), !same, c.resumed)
			}
			if keys := blobtest.Keys(t, cps); len(keys) != 0 {
				t.Errorf("checkpoints left: %v", keys)
			}
		})
	}
}
