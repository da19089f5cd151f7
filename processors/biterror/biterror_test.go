package biterror_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
	"github.com/millfleet/mill/processors/biterror"
)

type fixture struct {
	*bt.Env
	bitQ *memqueue.Queue
	bit  *bit.Processor
	be   *biterror.Processor
}

func setup(t *testing.T) *fixture {
	t.Helper()
	e := bt.New(t)
	f := &fixture{Env: e, bitQ: memqueue.New("bit", memqueue.Config{Clock: e.Clock}), bit: e.Processor(nil)}
	p, err := biterror.New(biterror.Config{Stores: e.Opener, BitLog: e.BitLog, AuditQueue: e.AuditQ, BitQueue: f.bitQ,
		Observer: &bit.Observer{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit},
		Common:   bit.Common{Clock: e.Clock, Logger: e.Logger()}})
	if err != nil {
		t.Fatal(err)
	}
	f.be = p
	return f
}

func (f *fixture) healthy(dup bool) {
	f.Put("1", bt.Good)
	if dup {
		f.Put("2", bt.Good)
	}
	f.SetIndex(bt.GoodMD5)
	f.SetAudit(task.ActionAddContent, bt.GoodMD5, map[string]string{"creator": "bob"})
}

// check runs the bit processor on tk and returns the resulting row.
func (f *fixture) check(tk *task.Task) *bitlog.Row {
	f.T.Helper()
	if err := f.bit.Handle(context.Background(), tk); err != nil {
		f.T.Fatalf("bit: %v", err)
	}
	return f.Row()
}

// handleBitError runs the bit-error processor on the single queued
// BIT_ERROR task.
func (f *fixture) handleBitError() {
	f.T.Helper()
	if err := f.handleBitErrorErr(); err != nil {
		f.T.Fatalf("biterror: %v", err)
	}
}

// handleBitErrorErr runs the bit-error processor on the single queued
// BIT_ERROR task and returns its error.
func (f *fixture) handleBitErrorErr() error {
	f.T.Helper()
	msgs := f.ErrQ.Messages()
	if len(msgs) != 1 {
		f.T.Fatalf("%d BIT_ERROR messages, want 1", len(msgs))
	}
	tk, err := task.Decode(msgs[0].Body)
	if err != nil {
		f.T.Fatal(err)
	}
	return f.be.Handle(context.Background(), tk)
}

// requeued returns the BIT tasks queued for re-checks, with their delays.
func (f *fixture) requeued() ([]*task.Task, []time.Duration) {
	f.T.Helper()
	var tks []*task.Task
	var delays []time.Duration
	for _, m := range f.bitQ.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			f.T.Fatal(err)
		}
		tks = append(tks, tk)
		delays = append(delays, m.VisibleAt.Sub(m.SentAt))
	}
	return tks, delays
}

func (f *fixture) content(storeID string) []byte {
	f.T.Helper()
	rc, _, err := f.Provider(storeID).Get(context.Background(), bt.Space, bt.Item)
	if err != nil {
		f.T.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		f.T.Fatal(err)
	}
	return b
}

func TestSourByteRepairedAndRecheckedSuccess(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")

	if r := f.check(bt.BitTask(0)); r.Case != 2 || r.Result != bitlog.ResultFailure {
		t.Fatalf("first check: %+v", r)
	}
	f.handleBitError()

	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Fatalf("store 1 holds %q after repair, want %q", got, bt.Good)
	}
	r := f.Row()
	if r.Case != 2 || r.Result != bitlog.ResultFailure || !strings.Contains(r.Details, "repaired from store 2") {
		t.Errorf("row after repair: %+v", r)
	}
	// The repair went through the audited provider of store 1.
	audits := f.Audits()
	if len(audits) != 1 || audits[0].StoreID != "1" || audits[0].Action != task.ActionAddContent ||
		audits[0].ContentChecksum != bt.GoodMD5 || audits[0].UserID != biterror.DefaultUserID {
		t.Errorf("AUDIT tasks after repair: %+v", audits)
	}
	tks, delays := f.requeued()
	if len(tks) != 1 || delays[0] != 0 {
		t.Fatalf("re-check tasks %v delays %v, want one, undelayed", tks, delays)
	}
	b, err := task.BitFrom(tks[0])
	if err != nil || b.RunID != bt.RunID || b.StoreID != "1" || b.Attempts != 0 {
		t.Fatalf("re-check task %+v, %v", b, err)
	}
	r = f.check(tks[0])
	if r.Case != 1 || r.Result != bitlog.ResultSuccess || !strings.Contains(r.Details, "re-check after case 2: repaired from store 2") {
		t.Fatalf("re-check row %+v, want SUCCESS case 1 noting the repair", r)
	}
	if c, _ := f.BitLog.Count(context.Background(), bt.RunID, bt.Account, "1", bt.Space); c.Total != 1 {
		t.Errorf("counts %+v: the item must keep one row", c)
	}
}

func TestMissingItemRestored(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Remove("1")
	if r := f.check(bt.BitTask(2)); r.Case != 8 || r.Result != bitlog.ResultError {
		t.Fatalf("check: %+v", r)
	}
	f.handleBitError()
	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Fatalf("store 1 holds %q, want the restored item", got)
	}
	tks, _ := f.requeued()
	if len(tks) != 1 {
		t.Fatalf("%d re-checks", len(tks))
	}
	if r := f.check(tks[0]); r.Case != 1 {
		t.Fatalf("re-check %+v", r)
	}
}

// needsPerson checks that err dead-letters the task as one for a person.
func needsPerson(t *testing.T, err error, want string) {
	t.Helper()
	if !processors.IsPermanent(err) || !errors.Is(err, biterror.ErrNeedsPerson) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want a permanent ErrNeedsPerson mentioning %q", err, want)
	}
}

// TestExternalRecordedThenDeadLettered: an external bit error is recorded
// and then handed to a person through the dead-letter queue (a permanent
// error); nothing is changed.
func TestExternalRecordedThenDeadLettered(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.BreakStorageChecksum("1", bt.OldMD5)
	if r := f.check(bt.BitTask(0)); r.Case != 3 {
		t.Fatalf("check: %+v", r)
	}
	needsPerson(t, f.handleBitErrorErr(), "case 3")
	r := f.Row()
	if r.Case != 3 || r.Result != bitlog.ResultFailure || !strings.Contains(r.Details, "resolution: external") {
		t.Errorf("row %+v", r)
	}
	if tks, _ := f.requeued(); len(tks) != 0 || len(f.Audits()) != 0 {
		t.Errorf("external case changed something: %d re-checks, %d audits", len(tks), len(f.Audits()))
	}
}

func TestNoHealthyCopyLeft(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")
	f.check(bt.BitTask(0))
	f.Sour("2") // store 2 goes sour before the repair: its recorded MD5 still matches
	needsPerson(t, f.handleBitErrorErr(), "does not match its own checksum")
	if got := f.content("1"); bytes.Equal(got, bt.Good) || len(f.Audits()) != 0 {
		t.Fatal("store 1 was 'repaired' from a sour copy")
	}
	r := f.Row()
	if !strings.Contains(r.Details, "does not match its own checksum") {
		t.Errorf("row %+v", r)
	}
	if tks, _ := f.requeued(); len(tks) != 0 {
		t.Errorf("re-check queued without a repair")
	}
}

// TestForgedRepairRefused: a BIT_ERROR task whose checksums were forged
// (or are stale) to name another store's different content as the
// consensus is refused: the store's copy, which matches the consensus as
// the item is now, is not overwritten; nothing is recorded or queued.
func TestForgedRepairRefused(t *testing.T) {
	other := []byte("some other content")
	otherMD5 := bt.MD5Hex(other)
	for _, c := range []struct {
		name string
		be   task.BitError
	}{
		{"case 2", task.BitError{Case: 2, ContentChecksum: bt.GoodMD5, StorageChecksum: otherMD5, IndexChecksum: otherMD5, AuditChecksum: otherMD5}},
		{"case 8", task.BitError{Case: 8, IndexChecksum: otherMD5, AuditChecksum: otherMD5}},
		{"case 4", task.BitError{Case: 4, StorageChecksum: bt.GoodMD5, IndexChecksum: otherMD5, AuditChecksum: otherMD5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			f.healthy(false)
			f.Put("2", other) // store 2 holds something else, with its own correct checksum
			be := c.be
			be.Account, be.StoreID, be.SpaceID, be.ContentID, be.RunID = bt.Account, "1", bt.Space, bt.Item, bt.RunID
			be.InternallyResolvable = true
			err := f.be.Handle(context.Background(), be.Task())
			if !processors.IsPermanent(err) || !errors.Is(err, biterror.ErrNotObserved) ||
				!strings.Contains(err.Error(), "refused by the observation rule") {
				t.Errorf("err = %v, want a permanent refusal naming the observation rule", err)
			}
			if got := f.content("1"); !bytes.Equal(got, bt.Good) {
				t.Fatalf("store 1 holds %q, want its healthy copy untouched", got)
			}
			if r := f.Row(); r != nil {
				t.Errorf("a refused task recorded %+v", r)
			}
			if tks, _ := f.requeued(); len(tks) != 0 || len(f.Audits()) != 0 {
				t.Errorf("a refused task queued %d re-checks and %d audits", len(tks), len(f.Audits()))
			}
		})
	}
}

// TestRepairUnprovableCopyRefused: the bytes of an unreadable store are not
// read and its provider reports no checksum, so nothing proves its copy
// differs: no repair.
func TestRepairUnprovableCopyRefused(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Wrap("1", func(p storage.Provider) storage.Provider { return noChecksum{p} })
	ob := &bit.Observer{Stores: f.Opener, Index: f.Index, AuditLog: f.Audit,
		ReadSettings: bit.ReadSettings{UnreadableStores: []string{bt.Account + "/1"}}}
	p, err := biterror.New(biterror.Config{Stores: f.Opener, Observer: ob, BitLog: f.BitLog, AuditQueue: f.AuditQ,
		BitQueue: f.bitQ, Common: bit.Common{Clock: f.Clock, Logger: f.Logger()}})
	if err != nil {
		t.Fatal(err)
	}
	// The run's bit check recorded case 4 (no S to compare, content not read).
	f.recordRow(bitlog.ResultError, 4)
	be := task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID,
		Case: 4, InternallyResolvable: true, IndexChecksum: bt.GoodMD5, AuditChecksum: bt.GoodMD5}
	if err := p.Handle(context.Background(), be.Task()); !errors.Is(err, biterror.ErrRepairNotProven) {
		t.Fatalf("err = %v, want ErrRepairNotProven", err)
	}
	if len(f.Audits()) != 0 {
		t.Error("store 1 was written")
	}
}

func TestAuditResync(t *testing.T) {
	f := setup(t)
	f.Put("1", bt.Good)
	f.SetIndex(bt.GoodMD5)
	f.SetAudit(task.ActionAddContent, bt.OldMD5, nil)
	if r := f.check(bt.BitTask(0)); r.Case != 6 {
		t.Fatalf("check: %+v", r)
	}
	f.handleBitError()
	audits := f.Audits()
	if len(audits) != 1 || audits[0].ContentChecksum != bt.GoodMD5 || audits[0].Action != task.ActionAddContent {
		t.Fatalf("AUDIT tasks %+v", audits)
	}
	tks, delays := f.requeued()
	if len(tks) != 1 || delays[0] != bit.DefaultRecheckDelay {
		t.Fatalf("re-check %v after %v, want one after %v", tks, delays, bit.DefaultRecheckDelay)
	}
}

func TestMalformed(t *testing.T) {
	f := setup(t)
	err := f.be.Handle(context.Background(), task.New(task.TypeBitError, map[string]string{"account": bt.Account}))
	if !processors.IsPermanent(err) {
		t.Errorf("malformed: %v, want permanent", err)
	}
	if _, err := biterror.New(biterror.Config{}); err == nil {
		t.Error("New with an empty config succeeded")
	}
}

// A repair naming a content ID the stores refuse cannot succeed on a
// retry: permanent at once.
func TestInvalidContentIDIsPermanent(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	tk := task.BitError{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: "../x", RunID: bt.RunID,
		Case: 2, InternallyResolvable: true, ContentChecksum: bt.OldMD5, StorageChecksum: bt.GoodMD5,
		IndexChecksum: bt.GoodMD5, AuditChecksum: bt.GoodMD5}.Task()
	err := f.be.Handle(context.Background(), tk)
	if !processors.IsPermanent(err) || !errors.Is(err, storage.ErrInvalidID) {
		t.Errorf("err = %v, want permanent ErrInvalidID", err)
	}
}

// noChecksum is a provider that reports no checksum of its items.
type noChecksum struct{ storage.Provider }

func (p noChecksum) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	info, err := p.Provider.Head(ctx, space, id)
	if info != nil {
		c := *info
		c.Checksum, c.ProviderChecksum = "", ""
		info = &c
	}
	return info, err
}
