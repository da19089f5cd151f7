package bit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// TestReplacedCopyOnEmulator: store 1's copy (S3, on the emulator) is
// overwritten by a raw PutObject keeping its "mill-md5" metadata. Read,
// the copy's bytes and ETag agree with each other, not with the MD5 Mill
// recorded, the index and the audit log: case 2, a copy that differs,
// repairable from store 2 (before: case 10, an update to capture, with an
// AUDIT re-sync the audit processor refused). Not read (the store
// configured unreadable), the ETag contradicts the recorded MD5: case 4,
// resolvable as case 2 on the last attempt.
func TestReplacedCopyOnEmulator(t *testing.T) {
	for _, unreadable := range []bool{false, true} {
		t.Run(map[bool]string{false: "read", true: "not read"}[unreadable], func(t *testing.T) {
			e := bt.New(t)
			client, bucket := e.S3(t)
			ctx := context.Background()
			healthy(e, true)
			replacement := []byte("replaced behind Mill's back")
			bt.ReplaceS3Object(ctx, t, client, bucket, "1/"+bt.Space+"/"+bt.Item, replacement)
			p := e.Processor(func(c *bit.Config) {
				if unreadable {
					c.UnreadableStores = []string{bt.Account + "/1"}
				}
			})
			if err := p.Handle(ctx, bt.BitTask(2)); err != nil {
				t.Fatal(err)
			}
			r := e.Row()
			wantCase, wantResult, wantC, wantS := 2, bitlog.ResultFailure, bt.MD5Hex(replacement), bt.GoodMD5
			if unreadable {
				wantCase, wantResult, wantC, wantS = 4, bitlog.ResultError, "", bt.MD5Hex(replacement)
			}
			if r.Case != wantCase || r.Result != wantResult || r.ContentChecksum != wantC || r.StorageChecksum != wantS ||
				r.IndexChecksum != bt.GoodMD5 || r.AuditChecksum != bt.GoodMD5 || !strings.Contains(r.Details, "not the one Mill wrote") {
				t.Fatalf("row: %s case %d C=%q S=%q I=%q A=%q (%s); want %s case %d C=%q S=%q",
					r.Result, r.Case, r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum, r.Details, wantResult, wantCase, wantC, wantS)
			}
			bes := e.BitErrors()
			if len(bes) != 1 || !bes[0].InternallyResolvable || bes[0].Case != wantCase {
				t.Fatalf("BIT_ERROR tasks %+v, want one resolvable case %d", bes, wantCase)
			}
			if a := e.Audits(); len(a) != 0 {
				t.Errorf("AUDIT tasks %+v: a replaced copy is repaired, not captured as an update", a)
			}
		})
	}
}

// TestReplacedCopyCapturedOnEmulator: when the index and the audit log
// follow the replaced bytes (an S3 event of the overwrite was recorded
// with the ETag's MD5), only the kept recorded MD5 is wrong: case 3, for a
// person — never case 1, and nothing is copied over the new bytes.
func TestReplacedCopyCapturedOnEmulator(t *testing.T) {
	e := bt.New(t)
	client, bucket := e.S3(t)
	ctx := context.Background()
	healthy(e, true)
	replacement := []byte("an overwrite the audit log recorded")
	bt.ReplaceS3Object(ctx, t, client, bucket, "1/"+bt.Space+"/"+bt.Item, replacement)
	if err := e.Index.SetChecksum(ctx, bt.CIItem(), bt.MD5Hex(replacement)); err != nil {
		t.Fatal(err)
	}
	e.AddAudit(time.Minute, task.ActionAddContent, bt.MD5Hex(replacement), props)
	if err := e.Processor(nil).Handle(ctx, bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r.Case != 3 || r.Result != bitlog.ResultFailure || r.ContentChecksum != bt.MD5Hex(replacement) || r.StorageChecksum != bt.GoodMD5 {
		t.Fatalf("row: %s case %d C=%q S=%q (%s); want FAILURE case 3, S the kept recorded MD5", r.Result, r.Case, r.ContentChecksum, r.StorageChecksum, r.Details)
	}
	if bes := e.BitErrors(); len(bes) != 1 || bes[0].InternallyResolvable {
		t.Fatalf("BIT_ERROR tasks %+v, want one, external", bes)
	}
}
