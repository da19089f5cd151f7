package s3store

import (
	"bytes"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// TestPutStorageClass: PutOptions.StorageClass writes the item in that
// class, in one request and in parts (a repair of an archived copy keeps
// its class); unset, the bucket's default (STANDARD).
func TestPutStorageClass(t *testing.T) {
	client, bucket := setupBucket(t)
	enableVersioning(t, client, bucket)
	s, err := New(client, Config{Bucket: bucket, Upload: storage.Upload{Threshold: 5 << 20, Transfer: storage.Transfer{PartSize: 5 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateSpace(ctx, "cold"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, class string
		size      int
		sum       bool // the MD5 known up front (the parts go to the item's key)
	}{{"small", "GLACIER", 10, true}, {"big", "DEEP_ARCHIVE", 6 << 20, false}, {"bigsum", "GLACIER", 6 << 20, true}, {"hot", "", 10, false}} {
		body := bytes.Repeat([]byte("x"), tc.size)
		o := storage.PutOptions{Size: int64(tc.size), StorageClass: tc.class}
		if tc.sum {
			o.Checksum, _, _ = storage.MD5Hex(bytes.NewReader(body))
		}
		if _, err := s.Put(ctx, "cold", tc.id, bytes.NewReader(body), o); err != nil {
			t.Fatalf("put %s: %v", tc.id, err)
		}
		info, err := s.Head(ctx, "cold", tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if info.StorageClass != tc.class || info.Archived != (tc.class != "") {
			t.Errorf("%s: class %q archived %t, want %q", tc.id, info.StorageClass, info.Archived, tc.class)
		}
	}
}
