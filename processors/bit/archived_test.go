package bit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// TestArchivedOnEmulator: store 1 is an S3 bucket on the emulator whose
// item a lifecycle rule moved to an archival class (an in-place copy with
// the class, as a transition does). The bit check reads no bytes of a
// GLACIER or DEEP_ARCHIVE item — C is N/A from the object's class, with no
// store configured unreadable — and finds case 1 from S, I and A; a
// GLACIER_IR item is read as any other.
func TestArchivedOnEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.S3()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		class types.StorageClass
		read  bool
	}{{types.StorageClassGlacier, false}, {types.StorageClassDeepArchive, false}, {types.StorageClassGlacierIr, true}} {
		t.Run(string(tc.class), func(t *testing.T) {
			bucket := testenv.Prefix(t) + "cold"
			if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			testenv.CleanupBucket(t, client, bucket)
			s, err := s3store.New(client, s3store.Config{Bucket: bucket})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateSpace(ctx, bt.Space); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Put(ctx, bt.Space, bt.Item, bytes.NewReader(bt.Good), storage.PutOptions{Size: int64(len(bt.Good)),
				MimeType: "text/plain", Properties: map[string]string{"creator": "bob"}}); err != nil {
				t.Fatal(err)
			}
			key := bt.Space + "/" + bt.Item
			if _, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
				CopySource: aws.String(bucket + "/" + key), StorageClass: tc.class, MetadataDirective: types.MetadataDirectiveCopy}); err != nil {
				t.Fatal(err)
			}
			e := bt.New(t)
			e.Wrap("1", func(storage.Provider) storage.Provider { return s })
			e.SetIndex(bt.GoodMD5)
			e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
			if err := e.Processor(nil).Handle(ctx, bt.BitTask(0)); err != nil {
				t.Fatal(err)
			}
			r := e.Row()
			if r.Result != bitlog.ResultSuccess || r.Case != 1 || r.StorageChecksum != bt.GoodMD5 {
				t.Fatalf("row: %s case %d S %q (%s)", r.Result, r.Case, r.StorageChecksum, r.Details)
			}
			archivedNote := strings.Contains(r.Details, "archived: storage class "+string(tc.class))
			if tc.read && (r.ContentChecksum != bt.GoodMD5 || archivedNote) {
				t.Errorf("%s: C %q, details %q; want the bytes read", tc.class, r.ContentChecksum, r.Details)
			}
			if !tc.read && (r.ContentChecksum != "" || !archivedNote) {
				t.Errorf("%s: C %q, details %q; want C N/A for an archived item", tc.class, r.ContentChecksum, r.Details)
			}
			// The row says how C was made, how many bytes were hashed and
			// whether the copy's class is archival.
			wantMethod, wantBytes := bitlog.MethodStored, int64(0)
			if tc.read {
				wantMethod, wantBytes = bitlog.MethodRead, int64(len(bt.Good))
			}
			if r.Method != wantMethod || r.Bytes != wantBytes || r.Archived != !tc.read {
				t.Errorf("%s: method %q bytes %d archived %v; want %q %d %v", tc.class, r.Method, r.Bytes, r.Archived, wantMethod, wantBytes, !tc.read)
			}
		})
	}
}
