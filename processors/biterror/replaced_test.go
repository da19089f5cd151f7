package biterror_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// TestReplacedReplicaOnEmulatorRepaired: store 1's copy (S3, on the
// emulator) is overwritten by a raw PutObject that keeps its "mill-md5"
// metadata, so its ETag is the new bytes' MD5 and its recorded MD5 the
// old one. The bit check finds a copy that differs (case 2, repairable
// from store 2) — not case 10, an update to capture — the bit-error
// processor repairs it from store 2 through the audited provider, and the
// re-check succeeds.
func TestReplacedReplicaOnEmulatorRepaired(t *testing.T) {
	f := setup(t)
	client, bucket := f.S3(t)
	ctx := context.Background()
	f.healthy(true)
	replacement := []byte("not the bytes Mill wrote")
	bt.ReplaceS3Object(ctx, t, client, bucket, "1/"+bt.Space+"/"+bt.Item, replacement)

	r := f.check(bt.BitTask(0))
	if r.Case != 2 || r.Result != bitlog.ResultFailure || r.ContentChecksum != bt.MD5Hex(replacement) || r.StorageChecksum != bt.GoodMD5 ||
		!strings.Contains(r.Details, "not the one Mill wrote") {
		t.Fatalf("bit check of the replaced copy: %s case %d C=%s S=%s (%s); want FAILURE case 2, C the new bytes, S the recorded MD5",
			r.Result, r.Case, r.ContentChecksum, r.StorageChecksum, r.Details)
	}
	bes := f.BitErrors()
	if len(bes) != 1 || !bes[0].InternallyResolvable || bes[0].Case != 2 {
		t.Fatalf("BIT_ERROR tasks %+v, want one resolvable case 2", bes)
	}
	f.handleBitError()

	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Fatalf("store 1 holds %q after the repair, want %q", got, bt.Good)
	}
	h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("1/" + bt.Space + "/" + bt.Item)})
	if err != nil {
		t.Fatal(err)
	}
	if etag := strings.Trim(aws.ToString(h.ETag), `"`); etag != bt.GoodMD5 || h.Metadata[s3store.MetaMD5] != bt.GoodMD5 {
		t.Errorf("after the repair: ETag %s, %s %s; want both %s", etag, s3store.MetaMD5, h.Metadata[s3store.MetaMD5], bt.GoodMD5)
	}
	audits := f.Audits()
	if len(audits) != 1 || audits[0].StoreID != "1" || audits[0].Action != task.ActionAddContent || audits[0].ContentChecksum != bt.GoodMD5 {
		t.Errorf("AUDIT tasks of the repair: %+v", audits)
	}
	tks, _ := f.requeued()
	if len(tks) != 1 {
		t.Fatalf("%d re-checks queued, want 1", len(tks))
	}
	if r := f.check(tks[0]); r.Case != 1 || r.Result != bitlog.ResultSuccess {
		t.Fatalf("re-check after the repair: %s case %d (%s)", r.Result, r.Case, r.Details)
	}
}

// TestReplacedFSBlobRepaired: the same on filesystem stores — store 1's
// blob swapped for another file under its sidecar — is found as case 2
// and repaired from store 2; the re-check succeeds.
func TestReplacedFSBlobRepaired(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	replacement := []byte("a longer file put in place of the blob")
	f.Replace("1", replacement)
	if r := f.check(bt.BitTask(0)); r.Case != 2 || r.ContentChecksum != bt.MD5Hex(replacement) || r.StorageChecksum != bt.GoodMD5 {
		t.Fatalf("bit check of the replaced blob: %s case %d C=%s S=%s (%s)", r.Result, r.Case, r.ContentChecksum, r.StorageChecksum, r.Details)
	}
	f.handleBitError()
	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Fatalf("store 1 holds %q after the repair, want %q", got, bt.Good)
	}
	tks, _ := f.requeued()
	if len(tks) != 1 {
		t.Fatalf("%d re-checks queued, want 1", len(tks))
	}
	if r := f.check(tks[0]); r.Case != 1 || r.Result != bitlog.ResultSuccess {
		t.Fatalf("re-check after the repair: %s case %d (%s)", r.Result, r.Case, r.Details)
	}
}
