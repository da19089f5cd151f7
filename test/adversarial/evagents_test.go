package adversarial

import (
	"testing"

	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
)

// checkAgentsAndSources: the events of a fleet whose Workman runs with
// --worker-id worker name it (and Mill's version) as the agent of every
// fixity check, every replication from store 1 names store 1 as its
// source, and every repair names the store of the good copy it read.
func checkAgentsAndSources(t *testing.T, events []*evidence.Event, worker string) {
	t.Helper()
	for _, ev := range events {
		switch ev.Type {
		case evidence.FixityCheck:
			if a := ev.Agent; a.Kind != evidence.Software || a.Name != derive.WorkmanAgent || a.Instance != worker ||
				a.Version == "" || a.Version == derive.Unrecorded {
				t.Errorf("fixity check %s of %s/%s: agent %+v, want %s %s with a version", ev.ID, ev.Object.Store, ev.Object.ContentID,
					a, derive.WorkmanAgent, worker)
			}
		case evidence.Replication:
			if ev.Source == nil || ev.Source.Store != "1" || ev.Object.Store == "1" {
				t.Errorf("replication %s to store %s: source %+v, want store 1", ev.ID, ev.Object.Store, ev.Source)
			}
		case evidence.Repair:
			if ev.Source == nil || ev.Source.Store == derive.Unrecorded || ev.Source.Store == ev.Object.Store {
				t.Errorf("repair %s of store %s: source %+v, want another store", ev.ID, ev.Object.Store, ev.Source)
			}
		}
	}
}
