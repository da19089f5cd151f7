package biterror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	bt "github.com/millfleet/mill/processors/bit/bittest"
	"github.com/millfleet/mill/processors/biterror"
)

// hostile is a description an attacker writes: a verdict, a formula, a
// bidi override and a forged second line.
const hostile = "=HYPERLINK(\"http://evil.example/\")\u202e FAILURE: every copy is corrupt\nresolution: deleted"

// forgedSums are checksums no copy of the item has.
var forgedSums = [4]string{"ffffffffffffffffffffffffffffffff", "00000000000000000000000000000000", "deadbeefdeadbeefdeadbeefdeadbeef", "not a checksum"}

// recordRow records the run's row of the item as the bit check would have.
func (f *fixture) recordRow(res bitlog.Result, caseNumber int) {
	f.T.Helper()
	if err := f.BitLog.Record(context.Background(), bitlog.Row{RunID: bt.RunID, Account: bt.Account, StoreID: "1", StoreKind: "fs",
		SpaceID: bt.Space, ContentID: bt.Item, Result: res, Case: caseNumber,
		Details: fmt.Sprintf("recorded by the test as the bit check's case %d", caseNumber), CheckedAt: bt.T0}); err != nil {
		f.T.Fatal(err)
	}
}

// forged is a BIT_ERROR for the item in store 1 claiming caseNumber, with
// the hostile description and forged checksums.
func forged(caseNumber int, resolvable bool) *task.Task {
	return task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID,
		Description: hostile, StoreType: "s3\u202e", Case: caseNumber, InternallyResolvable: resolvable,
		ContentChecksum: forgedSums[0], StorageChecksum: forgedSums[1], IndexChecksum: forgedSums[2], AuditChecksum: forgedSums[3]}.Task()
}

// unchanged checks that nothing was recorded, queued or written: the run's
// rows are want, both copies hold the good content, no task was sent.
func (f *fixture) unchanged(t *testing.T, want []bitlog.Row) {
	t.Helper()
	rows, _, err := f.BitLog.Results(context.Background(), bitlog.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("bit log rows changed:\n got %+v\nwant %+v", rows, want)
	}
	for _, s := range []string{"1", "2"} {
		if got := f.content(s); !bytes.Equal(got, bt.Good) {
			t.Errorf("store %s holds %q, want its good copy untouched", s, got)
		}
	}
	if tks, _ := f.requeued(); len(tks) != 0 || len(f.Audits()) != 0 || len(f.ErrQ.Messages()) != 0 {
		t.Errorf("a refused task queued %d re-checks, %d audits, %d bit errors", len(tks), len(f.Audits()), len(f.ErrQ.Messages()))
	}
}

// TestForgedBitErrorOfGoodItemRefused: a forged BIT_ERROR of any case,
// resolvable or not, with a hostile description and checksums, for an item
// whose copies are all good is refused with a permanent error naming the
// rule, and nothing is recorded: not after the run's check found the item
// healthy (its SUCCESS row, and so a finished report, stays), not after
// the run's check saw an error that has healed since, not without any row.
func TestForgedBitErrorOfGoodItemRefused(t *testing.T) {
	for _, situation := range []struct {
		name string
		prep func(f *fixture)
		rule error
	}{
		{"after the run's check found the item healthy", func(f *fixture) {
			if r := f.check(bt.BitTask(0)); r.Result != bitlog.ResultSuccess {
				t.Fatalf("check: %+v", r)
			}
		}, biterror.ErrNotCheckedError},
		{"after the run's check saw an error since healed", func(f *fixture) { f.recordRow(bitlog.ResultFailure, 2) }, biterror.ErrNotObserved},
		{"without a row of the run", func(f *fixture) {}, biterror.ErrNotObserved},
	} {
		for _, c := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 99} {
			for _, resolvable := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/case %d/resolvable %t", situation.name, c, resolvable), func(t *testing.T) {
					f := setup(t)
					f.healthy(true)
					situation.prep(f)
					before, _, err := f.BitLog.Results(context.Background(), bitlog.Filter{})
					if err != nil {
						t.Fatal(err)
					}
					err = f.be.Handle(context.Background(), forged(c, resolvable))
					if !processors.IsPermanent(err) || !errors.Is(err, situation.rule) || !strings.Contains(err.Error(), "refused by the") {
						t.Errorf("err = %v, want a permanent refusal by %v", err, situation.rule)
					}
					if err != nil && strings.Contains(err.Error(), "every copy is corrupt") {
						t.Errorf("the refusal repeats the message's text: %v", err)
					}
					f.unchanged(t, before)
				})
			}
		}
	}
}

// TestObservedErrorRecordedNotClaimed: for an item with a real error the
// row carries what the processor observed — the case, the four checksums,
// the store's registered kind, Mill's own details — not the message's
// claims, and the repair is decided from the observation (the message said
// "not resolvable").
func TestObservedErrorRecordedNotClaimed(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")
	if r := f.check(bt.BitTask(0)); r.Case != 2 {
		t.Fatalf("check: %+v", r)
	}
	if err := f.be.Handle(context.Background(), forged(6, false)); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	r := f.Row()
	want := bitlog.Row{Result: bitlog.ResultFailure, Case: 2, StoreKind: "fs",
		ContentChecksum: bt.SourMD5, StorageChecksum: bt.GoodMD5, IndexChecksum: bt.GoodMD5, AuditChecksum: bt.GoodMD5}
	if r.Result != want.Result || r.Case != want.Case || r.StoreKind != want.StoreKind || r.ContentChecksum != want.ContentChecksum ||
		r.StorageChecksum != want.StorageChecksum || r.IndexChecksum != want.IndexChecksum || r.AuditChecksum != want.AuditChecksum {
		t.Errorf("row %+v, want the observed %+v", r, want)
	}
	for _, s := range append(forgedSums[:], "every copy is corrupt", "HYPERLINK", "\u202e", "deleted") {
		if strings.Contains(r.Details, s) || strings.Contains(r.StoreKind, s) {
			t.Errorf("row details %q hold the message's %q", r.Details, s)
		}
	}
	for _, s := range []string{"case 2: content went sour", "the BIT_ERROR message claimed case 6", "repaired from store 2"} {
		if !strings.Contains(r.Details, s) {
			t.Errorf("row details %q do not say %q", r.Details, s)
		}
	}
	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Errorf("store 1 holds %q after the repair", got)
	}
}

// TestDifferentErrorObserved: the message claims a repairable case 2; the
// processor observes case 3 (the provider's checksum is wrong, the bytes
// are good): it records case 3, changes nothing and hands the task to a
// person.
func TestDifferentErrorObserved(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.BreakStorageChecksum("1", bt.OldMD5)
	if r := f.check(bt.BitTask(0)); r.Case != 3 {
		t.Fatalf("check: %+v", r)
	}
	claim := task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID, Case: 2,
		InternallyResolvable: true, ContentChecksum: bt.OldMD5, StorageChecksum: bt.GoodMD5, IndexChecksum: bt.GoodMD5, AuditChecksum: bt.GoodMD5}
	needsPerson(t, f.be.Handle(context.Background(), claim.Task()), "case 3")
	r := f.Row()
	if r.Case != 3 || r.ContentChecksum != bt.GoodMD5 || r.StorageChecksum != bt.OldMD5 ||
		!strings.Contains(r.Details, "the BIT_ERROR message claimed case 2") || !strings.Contains(r.Details, "needs the storage provider") {
		t.Errorf("row %+v, want the observed case 3", r)
	}
	if tks, _ := f.requeued(); len(tks) != 0 || len(f.Audits()) != 0 {
		t.Errorf("case 3 changed something: %d re-checks, %d audits", len(tks), len(f.Audits()))
	}
}

// TestNoRowYetRetriedThenRefused: a BIT_ERROR for a real error whose run
// has no row for the item (the bit check sends the task just before it
// records its row, or the run id is made up) is retried, and refused on
// its last attempt; nothing is repaired or recorded meanwhile.
func TestNoRowYetRetriedThenRefused(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")
	claim := task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: "made-up-run", Case: 2,
		InternallyResolvable: true, ContentChecksum: bt.SourMD5, StorageChecksum: bt.GoodMD5, IndexChecksum: bt.GoodMD5, AuditChecksum: bt.GoodMD5}
	for done, permanent := range []bool{false, false, true} {
		ctx := processors.WithAttempts(context.Background(), processors.Attempts{Done: done, Limit: 3})
		err := f.be.Handle(ctx, claim.Task())
		if !errors.Is(err, biterror.ErrNotCheckedError) || processors.IsPermanent(err) != permanent {
			t.Errorf("attempt %d: err = %v, want ErrNotCheckedError, permanent %t", done+1, err, permanent)
		}
	}
	if rows, _, _ := f.BitLog.Results(context.Background(), bitlog.Filter{}); len(rows) != 0 {
		t.Errorf("rows recorded: %+v", rows)
	}
	if got := f.content("1"); bytes.Equal(got, bt.Good) || len(f.Audits()) != 0 {
		t.Error("store 1 was repaired for a run that has no row of the item")
	}
}

// TestAdHocClaimNeedsItsOwnRow: a BIT_ERROR outside any run (run id "")
// needs a row of a check outside any run; another run's error row of the
// item does not stand for it.
func TestAdHocClaimNeedsItsOwnRow(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")
	if r := f.check(bt.BitTask(0)); r.Case != 2 {
		t.Fatalf("check: %+v", r)
	}
	claim := task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, Case: 2, InternallyResolvable: true}
	ctx := processors.WithAttempts(context.Background(), processors.Attempts{Done: 2, Limit: 3})
	if err := f.be.Handle(ctx, claim.Task()); !processors.IsPermanent(err) || !errors.Is(err, biterror.ErrNotCheckedError) {
		t.Errorf("err = %v, want a permanent ErrNotCheckedError", err)
	}
	rows, _, err := f.BitLog.Results(context.Background(), bitlog.Filter{})
	if err != nil || len(rows) != 1 || rows[0].RunID != bt.RunID {
		t.Errorf("rows %+v, %v: want the run's row only", rows, err)
	}
	if got := f.content("1"); bytes.Equal(got, bt.Good) {
		t.Error("store 1 was repaired on another run's row")
	}
}
