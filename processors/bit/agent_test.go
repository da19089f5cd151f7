package bit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// The row of a check names the processor's configured agent, whatever the
// task says; a processor without one records none; an invalid agent is a
// configuration error.
func TestRowNamesConfiguredAgent(t *testing.T) {
	agent := bitlog.Agent{Instance: "worker-7", Version: "v1.4.0"}
	for _, tc := range []struct {
		name string
		cfg  bitlog.Agent
	}{{"configured", agent}, {"none", bitlog.Agent{}}} {
		t.Run(tc.name, func(t *testing.T) {
			e := bt.New(t)
			healthy(e, false)
			p := e.Processor(func(c *bit.Config) { c.Agent = tc.cfg })
			task := bt.BitTask(0)
			// A message cannot name the agent.
			task.Props["agent"], task.Props["instance"], task.Props["version"] = "forged", "forged", "forged"
			if err := p.Handle(context.Background(), task); err != nil {
				t.Fatal(err)
			}
			r := e.Row()
			if r == nil || r.Result != bitlog.ResultSuccess {
				t.Fatalf("row %+v, want a SUCCESS", r)
			}
			if r.Agent != tc.cfg {
				t.Errorf("row agent %+v, want %+v", r.Agent, tc.cfg)
			}
		})
	}
	e := bt.New(t)
	if _, err := bit.New(bit.Config{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit, BitLog: e.BitLog,
		AuditQueue: e.AuditQ, BitErrorQueue: e.ErrQ, Common: bit.Common{Agent: bitlog.Agent{Instance: "a\nb"}}}); err == nil || !strings.Contains(err.Error(), "Agent") {
		t.Errorf("New with an agent holding a newline = %v, want an Agent error", err)
	}
}
