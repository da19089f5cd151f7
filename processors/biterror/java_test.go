package biterror_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	bt "github.com/millfleet/mill/processors/bit/bittest"
	"github.com/millfleet/mill/processors/biterror"
)

// javaBitError is a BIT_ERROR as the Java Mill's bit check writes it
// (BitIntegrityErrorTask: no run, no case; a description, the Java store
// type and the checksums it saw), here claiming nonsense checksums.
func javaBitError(props map[string]string) *task.Task {
	p := map[string]string{task.KeyAccount: bt.Account, task.KeyStoreID: "1", task.KeySpaceID: bt.Space, task.KeyContentID: bt.Item,
		"description": "Checksums do not match", "storeType": "AMAZON_S3",
		"contentChecksum": "0000", "storeChecksum": "1111", "manifestChecksum": "2222"}
	for k, v := range props {
		p[k] = v
	}
	return &task.Task{Type: task.TypeBitError, Props: p}
}

// outsideRun is the item's row outside any run, or nil.
func (f *fixture) outsideRun() *bitlog.Row {
	f.T.Helper()
	rows, _, err := f.BitLog.Results(context.Background(), bitlog.Filter{Account: bt.Account, ContentID: bt.Item, StoreID: "1", SpaceID: bt.Space})
	if err != nil {
		f.T.Fatal(err)
	}
	if len(rows) == 0 || rows[0].RunID != "" {
		return nil
	}
	return &rows[0]
}

// TestJavaBitErrorRepairsWhatMillObserves: a Java-shaped BIT_ERROR means,
// as in the Java Mill, "a bit check found a problem with this item". Mill
// looks at the item itself: the error it observes (not the message's
// case or checksums) is recorded outside any run and repaired under the
// repair rule.
func TestJavaBitErrorRepairsWhatMillObserves(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	f.Sour("1")
	if err := f.be.Handle(t.Context(), javaBitError(nil)); err != nil {
		t.Fatalf("a Java-shaped BIT_ERROR of an observed bit error: %v", err)
	}
	if got := f.content("1"); !bytes.Equal(got, bt.Good) {
		t.Fatalf("store 1 holds %q, want the repair", got)
	}
	r := f.outsideRun()
	if r == nil || r.Case != 2 || r.Result != bitlog.ResultFailure || r.StorageChecksum == "1111" ||
		!strings.Contains(r.Details, "repaired from store 2") || !strings.Contains(r.Details, "Java-shaped") {
		t.Fatalf("row %+v, want the observed case 2 outside any run", r)
	}
	tks, _ := f.requeued()
	if len(tks) != 1 || tks[0].Get(task.KeyRunID) != "" {
		t.Fatalf("re-checks %v, want one outside any run", tks)
	}
}

// TestJavaBitErrorOfAHealthyItemIsRefused: the observation rule holds for
// the Java shape: a healthy item is refused, nothing recorded or changed;
// a BIT_ERROR with a run but no case is neither shape and refused.
func TestJavaBitErrorOfAHealthyItemIsRefused(t *testing.T) {
	f := setup(t)
	f.healthy(true)
	for _, tt := range []struct {
		name string
		tk   *task.Task
		rule error
	}{
		{"healthy", javaBitError(nil), biterror.ErrNotObserved},
		{"a run without a case", javaBitError(map[string]string{task.KeyRunID: bt.RunID}), task.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := f.be.Handle(t.Context(), tt.tk)
			if !processors.IsPermanent(err) || !errors.Is(err, tt.rule) {
				t.Fatalf("err = %v, want permanent %v", err, tt.rule)
			}
			if rows, _, _ := f.BitLog.Results(t.Context(), bitlog.Filter{}); len(rows) != 0 {
				t.Errorf("rows %+v", rows)
			}
			if tks, _ := f.requeued(); len(tks) != 0 || len(f.Audits()) != 0 {
				t.Errorf("queued %v / %v", tks, f.Audits())
			}
		})
	}
}
