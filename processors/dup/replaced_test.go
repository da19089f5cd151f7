package dup_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/processors"
	bt "github.com/millfleet/mill/processors/bit/bittest"
	"github.com/millfleet/mill/processors/dup"
)

// s3Pair returns S3 stores "1/" and "2/" of one new bucket on the emulator.
func s3Pair(t *testing.T) (*s3.Client, string, *s3store.Store, *s3store.Store) {
	t.Helper()
	client := testenv.AWS(t).S3()
	bucket := testenv.Prefix(t) + "dup"
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	var out [2]*s3store.Store
	for i, prefix := range []string{"1/", "2/"} {
		s, err := s3store.New(client, s3store.Config{Bucket: bucket, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return client, bucket, out[0], out[1]
}

// TestReplacedCopyIsNotInSyncOnEmulator: a destination copy whose bytes
// were replaced by a raw PutObject keeping its "mill-md5" metadata has
// the ETag's MD5, not the recorded one (storage.ChecksumOf), so it is not
// in sync with the source and is copied over (before: equal recorded MD5s,
// nothing done). A source replaced the same way is never copied from:
// ErrSourceCorrupt, permanent, nothing written.
func TestReplacedCopyIsNotInSyncOnEmulator(t *testing.T) {
	ctx := context.Background()
	for _, serverSide := range []bool{true, false} {
		t.Run(map[bool]string{true: "server-side copy", false: "streamed copy"}[serverSide], func(t *testing.T) {
			client, bucket, src, dst := s3Pair(t)
			e := setup(t, func(storage.Provider) storage.Provider { return src }, func(storage.Provider) storage.Provider { return dst },
				func(c *dup.Config) { c.DisableServerSideCopy = !serverSide })
			put(t, src, "item", "the original bytes", map[string]string{"owner": "ann"})
			put(t, dst, "item", "the original bytes", map[string]string{"owner": "ann"})
			bt.ReplaceS3Object(ctx, t, client, bucket, "2/"+space+"/item", []byte("replaced bytes, same claim"))
			si, _ := src.Head(ctx, space, "item")
			di, _ := dst.Head(ctx, space, "item")
			if si.Checksum != di.Checksum || dup.InSync(si, di) {
				t.Fatalf("recorded MD5s %s and %s; InSync %t: a replaced copy is in sync with nothing", si.Checksum, di.Checksum, dup.InSync(si, di))
			}
			if a, err := run(t, e, dupTask("item")); err != nil || a != dup.CopyContent {
				t.Fatalf("DUP of a replaced destination copy: %v, %v; want a copy", a, err)
			}
			if body, info := read(t, dst, "item"); body != "the original bytes" || !storage.ChecksumOf(info, nil).Holds(si.Checksum) {
				t.Fatalf("destination after the DUP: %q (%s)", body, storage.ChecksumOf(info, nil))
			}

			// Now the source is replaced: nothing is copied from it.
			bt.ReplaceS3Object(ctx, t, client, bucket, "1/"+space+"/item", []byte("a forged source"))
			a, err := run(t, e, dupTask("item"))
			if !errors.Is(err, dup.ErrSourceCorrupt) || !processors.IsPermanent(err) || !strings.Contains(err.Error(), "contradicts") {
				t.Fatalf("DUP from a replaced source: %v, %v; want a permanent ErrSourceCorrupt", a, err)
			}
			if body, _ := read(t, dst, "item"); body != "the original bytes" {
				t.Fatalf("destination after a refused DUP: %q", body)
			}
		})
	}
}

// TestReplacedFSCopyIsNotInSync: the same on filesystem stores — a blob
// swapped for another file under its sidecar (the recorded MD5 kept) is
// not the file the store wrote, so Head reports the MD5 of its bytes as
// the provider's checksum and the copy is not in sync; a source like it
// is never copied from.
func TestReplacedFSCopyIsNotInSync(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.src, "item", "the original bytes", nil)
	put(t, e.dst, "item", "the original bytes", nil)
	swapBlob(t, e.dst, "item", "THE ORIGINAL BYTES")
	if a, err := run(t, e, dupTask("item")); err != nil || a != dup.CopyContent {
		t.Fatalf("DUP of a replaced destination blob: %v, %v; want a copy", a, err)
	}
	if body, _ := read(t, e.dst, "item"); body != "the original bytes" {
		t.Fatalf("destination after the DUP: %q", body)
	}
	swapBlob(t, e.src, "item", "a forged source, longer")
	if a, err := run(t, e, dupTask("item")); !errors.Is(err, dup.ErrSourceCorrupt) || !processors.IsPermanent(err) {
		t.Fatalf("DUP from a replaced source blob: %v, %v; want a permanent ErrSourceCorrupt", a, err)
	}
	if body, _ := read(t, e.dst, "item"); body != "the original bytes" {
		t.Fatalf("destination after a refused DUP: %q", body)
	}
}

// swapBlob replaces an fs item's blob by a new file holding body, leaving
// its sidecar.
func swapBlob(t *testing.T, s *fsstore.Store, id, body string) {
	t.Helper()
	path, err := s.BlobPath(space, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
