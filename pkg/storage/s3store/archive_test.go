package s3store

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

// archive moves an item to class in place, keeping its metadata, as an S3
// lifecycle transition does.
func archive(t testing.TB, client *s3.Client, s *Store, space, id string, class types.StorageClass) {
	t.Helper()
	o, err := s.contentKey(space, id)
	key := o.key
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CopyObject(t.Context(), &s3.CopyObjectInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key),
		CopySource:        aws.String(object{bucket: s.cfg.Bucket, key: key}.copySource()),
		StorageClass:      class,
		MetadataDirective: types.MetadataDirectiveCopy,
	})
	if err != nil {
		t.Fatalf("move %s to %s: %v", key, class, err)
	}
}

// TestArchived checks an item in Glacier on the emulator: Head and the
// listing report its class, Get refuses with storage.ErrArchived (S3's
// InvalidObjectState), a restore is asked for once (asking again is not an
// error), and the restored copy reads as the item. An item in STANDARD has
// nothing to restore.
func TestArchived(t *testing.T) {
	client, bucket := setupBucket(t)
	s, err := New(client, Config{Bucket: bucket, Prefix: "p/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateSpace(ctx, "cold"); err != nil {
		t.Fatal(err)
	}
	data := []byte("frozen bytes")
	if _, err := s.Put(ctx, "cold", "a/item", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "cold", "warm", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	archive(t, client, s, "cold", "a/item", types.StorageClassGlacier)

	info, err := s.Head(ctx, "cold", "a/item")
	if err != nil {
		t.Fatal(err)
	}
	if info.StorageClass != "GLACIER" || !info.Archived || info.Restore != storage.RestoreNone || info.Readable() {
		t.Fatalf("Head of a Glacier item: class %q archived %v restore %q readable %v", info.StorageClass, info.Archived, info.Restore, info.Readable())
	}
	if info.Checksum == "" || info.Size != int64(len(data)) {
		t.Errorf("Head of a Glacier item lost its metadata: %+v", info)
	}
	warm, err := s.Head(ctx, "cold", "warm")
	if err != nil {
		t.Fatal(err)
	}
	if warm.StorageClass != "" || warm.Archived || !warm.Readable() {
		t.Errorf("Head of a STANDARD item: class %q archived %v", warm.StorageClass, warm.Archived)
	}
	var classes []string
	for e, err := range storage.WalkEntries(ctx, s, "cold", "", 0) {
		if err != nil {
			t.Fatal(err)
		}
		classes = append(classes, e.ID+"="+e.StorageClass)
	}
	if len(classes) != 2 || classes[0] != "a/item=GLACIER" || classes[1] != "warm=" {
		t.Errorf("listing classes: %q", classes)
	}

	if _, _, err := s.Get(ctx, "cold", "a/item"); !errors.Is(err, storage.ErrArchived) {
		t.Fatalf("Get of a Glacier item: %v, want ErrArchived", err)
	}
	if _, err := s.RequestRestore(ctx, "cold", "warm", 1, ""); !errors.Is(err, ErrNotArchived) {
		t.Errorf("RequestRestore of a STANDARD item: %v, want ErrNotArchived", err)
	}
	if _, err := s.RequestRestore(ctx, "cold", "gone", 1, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("RequestRestore of a missing item: %v, want ErrNotFound", err)
	}
	if _, err := s.RequestRestore(ctx, "cold", "a/item", 3, "Glacial"); err == nil || !strings.Contains(err.Error(), "Bulk, Standard or Expedited") {
		t.Errorf("RequestRestore at an unknown tier: %v, want a clear error", err)
	}
	if _, err := s.RequestRestore(ctx, "cold", "a/item", 0, ""); err == nil {
		t.Errorf("RequestRestore for 0 days: no error")
	}
	started, err := s.RequestRestore(ctx, "cold", "a/item", 3, storage.RestoreBulk)
	if err != nil || !started {
		t.Fatalf("RequestRestore: started %v, %v", started, err)
	}
	again, err := s.RequestRestore(ctx, "cold", "a/item", 3, storage.RestoreStandard)
	if err != nil || again {
		t.Fatalf("RequestRestore again: started %v, %v (want false, nil)", again, err)
	}
	info, err = s.Head(ctx, "cold", "a/item")
	if err != nil {
		t.Fatal(err)
	}
	if info.Restore == storage.RestoreNone {
		t.Fatalf("Head after a restore request: restore state %q", info.Restore)
	}
	// The emulator completes restores at once; S3 takes hours (Bulk).
	t.Logf("restore state after the request: %s", info.Restore)
	if info.Restore == storage.RestoreRestored {
		rc, _, err := s.Get(ctx, "cold", "a/item")
		if err != nil {
			t.Fatalf("Get of a restored item: %v", err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("restored copy: %q, %v", got, err)
		}
	}
}

// TestListedRestore reads the restore state a listing reports with the
// RestoreStatus attribute (S3 does; the emulator reports none, so the
// attribute is read here from the SDK's types).
func TestListedRestore(t *testing.T) {
	for _, c := range []struct {
		in   *types.RestoreStatus
		want storage.RestoreState
	}{
		{nil, storage.RestoreNone},
		{&types.RestoreStatus{}, storage.RestoreNone},
		{&types.RestoreStatus{IsRestoreInProgress: aws.Bool(true)}, storage.RestoreOngoing},
		{&types.RestoreStatus{IsRestoreInProgress: aws.Bool(false)}, storage.RestoreRestored},
	} {
		if got := listedRestore(c.in); got != c.want {
			t.Errorf("listedRestore(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}
