package derive_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
)

// A fixity check's agent is the Workman instance and Mill version its row
// names; a row naming none keeps the bit check as agent. The agent is
// part of the event (a row whose agent changed gives other content), never
// of its ID.
func TestFromRowAgent(t *testing.T) {
	r := bitlog.Row{RunID: "20260701T110000Z", Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a",
		Result: bitlog.ResultSuccess, ContentChecksum: md5a, IndexChecksum: md5a, Method: bitlog.MethodRead, CheckedAt: t0, Case: 1}
	old, err := derive.FromRow(r, derive.DefaultUsers)
	if err != nil {
		t.Fatal(err)
	}
	if want := (evidence.Agent{Kind: evidence.Software, Name: derive.DefaultUsers.BitAgent}); old.Agent != want {
		t.Errorf("row without an agent: event agent %+v, want %+v", old.Agent, want)
	}
	r.Agent = bitlog.Agent{Instance: "ip-10-0-1-7-4242", Version: "v1.4.0"}
	e, err := derive.FromRow(r, derive.DefaultUsers)
	if err != nil {
		t.Fatal(err)
	}
	if want := (evidence.Agent{Kind: evidence.Software, Name: "mill workman", Instance: "ip-10-0-1-7-4242", Version: "v1.4.0"}); e.Agent != want {
		t.Errorf("row with an agent: event agent %+v, want %+v", e.Agent, want)
	}
	if e.ID != old.ID {
		t.Errorf("the agent changed the event ID: %s, was %s", e.ID, old.ID)
	}
	// Half an agent: the missing half is said to be unrecorded.
	r.Agent = bitlog.Agent{Instance: "w1"}
	if e, err = derive.FromRow(r, derive.DefaultUsers); err != nil || e.Agent.Instance != "w1" || e.Agent.Version != derive.Unrecorded {
		t.Errorf("row with an instance only: agent %+v, %v", e.Agent, err)
	}
	// A row written around Validate (in the database) cannot break the
	// event: control characters are replaced, the event stays valid.
	r.Agent = bitlog.Agent{Instance: "w\n1", Version: "v\x00"}
	if e, err = derive.FromRow(r, derive.DefaultUsers); err != nil || e.Agent.Instance != "w\uFFFD1" || e.Agent.Version != "v\uFFFD" {
		t.Errorf("row with control characters: agent %+q, %v", e.Agent, err)
	}
}
