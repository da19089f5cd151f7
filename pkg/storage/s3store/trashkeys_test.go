package s3store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// TestTrashKeysAreNotContent: the keys a store writes under its trash
// prefix are ignored by S3-event auditing (s3event.Split), as they are
// left out of ListSpaces and ListContent (and so of the producers' sweeps
// and the bit checks, which list through the store).
func TestTrashKeysAreNotContent(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.S3()
	bucket := testenv.Prefix(t) + "trashkeys"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	for _, prefix := range []string{"", "mill/"} {
		s, err := s3store.New(client, s3store.Config{Bucket: bucket, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSpace(ctx, "sp"); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{"one", "two"} {
			if _, err := s.Put(ctx, "sp", "dir/item", strings.NewReader(body), storage.PutOptions{Size: 3}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx, "sp", "dir/item"); err != nil {
			t.Fatal(err)
		}
		out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + s3store.TrashPrefix)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 2 {
			t.Fatalf("prefix %q: %d trash objects, want 2", prefix, len(out.Contents))
		}
		for _, o := range out.Contents {
			if loc, err := s3event.Split("acct", "1", prefix, aws.ToString(o.Key)); !errors.Is(err, s3event.ErrIgnored) {
				t.Errorf("s3event.Split(%q) = %+v, %v; want ErrIgnored", aws.ToString(o.Key), loc, err)
			}
		}
		if spaces, err := s.ListSpaces(ctx); err != nil || len(spaces) != 1 || spaces[0] != "sp" {
			t.Errorf("prefix %q: ListSpaces %q, %v", prefix, spaces, err)
		}
		if ids, _, err := s.ListContent(ctx, "sp", "", 100); err != nil || len(ids) != 0 {
			t.Errorf("prefix %q: ListContent %q, %v", prefix, ids, err)
		}
	}
}
