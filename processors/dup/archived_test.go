package dup_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/dup"
)

// coldSource is an S3 store on the emulator holding item "cold" moved to
// the GLACIER class (an in-place copy with the class, as a lifecycle
// transition does) and item "warm" in STANDARD.
func coldSource(t *testing.T) *s3store.Store {
	t.Helper()
	client := testenv.AWS(t).S3()
	ctx := t.Context()
	bucket := testenv.Prefix(t) + "cold"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	s, err := s3store.New(client, s3store.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "cold", "frozen bytes", map[string]string{"owner": "ann"})
	put(t, s, "warm", "warm bytes", nil)
	key := space + "/cold"
	if _, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		CopySource: aws.String(bucket + "/" + key), StorageClass: types.StorageClassGlacier, MetadataDirective: types.MetadataDirectiveCopy}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArchivedSourceOnEmulator: a DUP of an archived source item writes
// nothing and is dead-lettered at once (permanent ErrSourceArchived naming
// the class); with RestoreArchivedDays the processor first asks S3 for a
// restore, and once the restored copy is there (the emulator restores at
// once; S3 takes hours) the same task copies the item. A STANDARD item of
// the same store copies as usual.
func TestArchivedSourceOnEmulator(t *testing.T) {
	ctx := context.Background()
	for _, days := range []int{0, 3} {
		t.Run(map[int]string{0: "no restore", 3: "restore 3 days"}[days], func(t *testing.T) {
			var src *s3store.Store
			e := setup(t, func(storage.Provider) storage.Provider { src = coldSource(t); return src }, nil,
				func(c *dup.Config) { c.RestoreArchivedDays = days })
			a, err := run(t, e, dupTask("cold"))
			if !errors.Is(err, dup.ErrSourceArchived) || !processors.IsPermanent(err) || !strings.Contains(err.Error(), "GLACIER") {
				t.Fatalf("Process of an archived item = %v, %v; want a permanent ErrSourceArchived naming GLACIER", a, err)
			}
			if _, err := e.dst.Head(ctx, space, "cold"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("destination after a refused copy: %v, want not found", err)
			}
			if got := e.auditActions(t); len(got) > 0 && strings.Contains(strings.Join(got, ","), "ADD_CONTENT") {
				t.Errorf("audited %v for a copy that was not made", got)
			}
			info, herr := src.Head(ctx, space, "cold")
			if herr != nil {
				t.Fatal(herr)
			}
			if days == 0 {
				if info.Restore != storage.RestoreNone {
					t.Errorf("restore state %q without RestoreArchivedDays", info.Restore)
				}
				if a, err := run(t, e, dupTask("warm")); err != nil || a != dup.CopyContent {
					t.Errorf("STANDARD item: %v, %v; want copy", a, err)
				}
				return
			}
			if !strings.Contains(err.Error(), "restore for 3 days was requested") {
				t.Errorf("reason %q does not say a restore was requested", err)
			}
			if info.Restore == storage.RestoreNone {
				t.Fatalf("no restore after the request")
			}
			if info.Restore != storage.RestoreRestored {
				// Real S3 takes hours to restore; an emulator completes it
				// at once, and one that does not must not pass unnoticed.
				if testenv.RealAWS() {
					t.Skipf("S3 has not completed the restore (%s); it takes hours", info.Restore)
				}
				t.Fatalf("the emulator has not completed the restore (%s)", info.Restore)
			}
			if a, err := run(t, e, dupTask("cold")); err != nil || a != dup.CopyContent {
				t.Fatalf("Process after the restore = %v, %v; want copy", a, err)
			}
			if body, info := read(t, e.dst, "cold"); body != "frozen bytes" || info.Properties["owner"] != "ann" {
				t.Errorf("destination holds %q %+v", body, info)
			}
		})
	}
}
