package biterror_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
	"github.com/millfleet/mill/processors/biterror"
)

// The row a repair leaves names the bit error processor's configured
// agent, not the one of the check before it or anything the BIT_ERROR
// message says; the repair's write names the store it copied from.
func TestRepairRowNamesConfiguredAgent(t *testing.T) {
	checker := bitlog.Agent{Instance: "checker", Version: "v1.3.0"}
	repairer := bitlog.Agent{Instance: "repairer", Version: "v1.4.0"}
	e := bt.New(t)
	f := &fixture{Env: e, bitQ: memqueue.New("bit", memqueue.Config{Clock: e.Clock}),
		bit: e.Processor(func(c *bit.Config) { c.Agent = checker })}
	p, err := biterror.New(biterror.Config{Stores: e.Opener, BitLog: e.BitLog, AuditQueue: e.AuditQ, BitQueue: f.bitQ,
		Observer: &bit.Observer{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit},
		Common:   bit.Common{Agent: repairer, Clock: e.Clock, Logger: e.Logger()}})
	if err != nil {
		t.Fatal(err)
	}
	f.be = p
	f.healthy(true)
	f.Sour("1")
	if r := f.check(bt.BitTask(0)); r.Case != 2 || r.Agent != checker {
		t.Fatalf("check row %+v, want case 2 by %+v", r, checker)
	}
	f.handleBitError()
	if r := f.Row(); r.Agent != repairer {
		t.Errorf("row after the repair names %+v, want %+v", r.Agent, repairer)
	}
	// The repair's AUDIT task names the store of the good copy it read.
	if audits := f.Audits(); len(audits) != 1 || audits[0].SourceStoreID != "2" {
		t.Errorf("AUDIT tasks of the repair %+v, want one naming source store 2", audits)
	}
	if _, err := biterror.New(biterror.Config{Stores: e.Opener, BitLog: e.BitLog, AuditQueue: e.AuditQ, BitQueue: f.bitQ,
		Observer: &bit.Observer{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit},
		Common:   bit.Common{Agent: bitlog.Agent{Version: "v1\x00"}}}); err == nil {
		t.Error("New accepted an agent version holding a NUL")
	}
}
