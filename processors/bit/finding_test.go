package bit_test

import (
	"context"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// TestRunsFindingStandsAgainstItsRedelivery: a BIT task that runs again in
// the same run after its first run recorded a finding — an SQS
// redelivery, a retry, a duplicate message — looks at an item the first
// run's own action repaired (case 7: the AUDIT task restored the audit
// entry; case 5: the index checksum was set in place) and sees case 1;
// the run's row keeps the finding (the report shows what was found), and
// the copy's verdict moves to the SUCCESS it saw.
func TestRunsFindingStandsAgainstItsRedelivery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(e *bt.Env)
		repair func(e *bt.Env) // what the first run's action does
		c      int
	}{
		{"7 audit entry missing", func(e *bt.Env) { e.Put("1", bt.Good); e.SetIndex(bt.GoodMD5) },
			func(e *bt.Env) { e.SetAudit(task.ActionAddContent, bt.GoodMD5, props) }, 7},
		{"5 index wrong", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.OldMD5)
			e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
		}, func(*bt.Env) {}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := bt.New(t)
			tc.fault(e)
			b := task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID}
			p := e.Processor(nil)
			if err := p.Handle(context.Background(), b.Task()); err != nil {
				t.Fatal(err)
			}
			first := e.Row()
			if first == nil || first.Result != bitlog.ResultFailure || first.Case != tc.c {
				t.Fatalf("first check: %+v, want FAILURE case %d", first, tc.c)
			}
			tc.repair(e)
			e.Clock.Advance(time.Minute)
			if err := p.Handle(context.Background(), b.Task()); err != nil { // the redelivery
				t.Fatal(err)
			}
			if r := e.Row(); r == nil || *r != *first {
				t.Fatalf("after the redelivery: %+v\nwant the run's finding %+v", r, first)
			}
			vs, _, err := e.BitLog.Verdicts(context.Background(), bt.Account, "1", bt.Space, "", 0)
			if err != nil || len(vs) != 1 || vs[0].Result != bitlog.ResultSuccess || !vs[0].CheckedAt.After(first.CheckedAt) {
				t.Fatalf("verdict %+v %v, want the redelivery's SUCCESS", vs, err)
			}
		})
	}
}

// TestRecheckReplacesOnlyItsCase: the bit-error processor's re-check after
// a repair ("case 2: repaired from store 2") replaces the run's case-2
// finding with what it sees; a re-check naming another case, or none,
// leaves the finding.
func TestRecheckReplacesOnlyItsCase(t *testing.T) {
	for why, replaced := range map[string]bool{
		"case 2: repaired from store 2":            true,
		"case 6: audit log re-synced from storage": false,
		"":       false,
		"FORGED": false,
	} {
		e := bt.New(t)
		healthy(e, true)
		e.Sour("1")
		b := task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID}
		p := e.Processor(nil)
		if err := p.Handle(context.Background(), b.Task()); err != nil {
			t.Fatal(err)
		}
		first := e.Row()
		if first == nil || first.Case != 2 {
			t.Fatalf("first check: %+v, want case 2", first)
		}
		e.Put("1", bt.Good) // the repair
		e.Clock.Advance(time.Minute)
		b.Extra = map[string]string{bit.KeyRecheckOf: why}
		if why == "" {
			b.Extra = nil
		}
		if err := p.Handle(context.Background(), b.Task()); err != nil {
			t.Fatal(err)
		}
		r := e.Row()
		if got := r != nil && r.Result == bitlog.ResultSuccess; got != replaced {
			t.Errorf("re-check %q: row %+v, replaced %v, want %v", why, r, got, replaced)
		}
	}
	for why, want := range map[string]int{"case 8: repaired from store 2": 8, "case 6: audit log re-synced from storage": 6,
		"case 7: repaired from store 2": 0, "case 2: repaired from store 2; FORGED": 0, "": 0} {
		if got := bit.RecheckCase(why); got != want {
			t.Errorf("RecheckCase(%q) = %d, want %d", why, got, want)
		}
	}
}
