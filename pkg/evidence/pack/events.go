package pack

import (
	"cmp"
	"context"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// EventsSummary counts the evidence log's events of the period.
type EventsSummary struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// LogSize is the size of the log's latest checkpoint (every event,
	// of any period); Total counts the period's.
	LogSize int64        `json:"logSize"`
	Total   int64        `json:"total"`
	ByType  []TypeCount  `json:"byTypeAndOutcome"`
	ByAgent []AgentCount `json:"byAgent"`
	// Repairs counts the period's successful repairs and RepairsVerified
	// those followed, later in the log and the period, by a successful
	// fixity check of the repaired copy. CorruptCopies counts the copies
	// whose fixity check failed in the period; Unrepaired those of them
	// without a successful repair after their last failure.
	Repairs         int64 `json:"repairs"`
	RepairsVerified int64 `json:"repairsVerified"`
	CorruptCopies   int64 `json:"corruptCopies"`
	Unrepaired      int64 `json:"unrepaired"`
	// Error says why the log's events could not all be read (the counts
	// are then those read before it).
	Error string `json:"error,omitempty"`
}

// TypeCount is the number of events of one type and outcome.
type TypeCount struct {
	Type    string `json:"type"`
	Outcome string `json:"outcome"`
	Count   int64  `json:"count"`
}

// AgentCount is the number of events of one agent (instances of Workman
// counted together per Mill version).
type AgentCount struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Count   int64  `json:"count"`
}

// copyState follows a copy that failed a fixity check or was repaired.
type copyState struct {
	broken        bool // its last fixity check failed, with no repair since
	failed        bool // a fixity check of it failed in the period
	repairPending bool // a repair awaits a successful fixity check
}

// summarise reads the period's events from the log, in log order.
func summarise(ctx context.Context, b blob.Store, v note.Verifier, p Period) (EventsSummary, error) {
	s := EventsSummary{Since: p.Since, Until: p.Until}
	types := map[TypeCount]int64{}
	agents := map[AgentCount]int64{}
	copies := map[evidence.Copy]*copyState{}
	cp, err := evidence.Events(ctx, b, v, func(_ int64, e *evidence.Event) error {
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil || !p.Contains(t) {
			return nil
		}
		s.Total++
		types[TypeCount{Type: string(e.Type), Outcome: string(e.Outcome)}]++
		agents[AgentCount{Kind: string(e.Agent.Kind), Name: e.Agent.Name, Version: e.Agent.Version}]++
		st := copies[e.Object]
		switch {
		case e.Type == evidence.FixityCheck && e.Outcome == evidence.Failure:
			if st == nil {
				st = &copyState{}
				copies[e.Object] = st
			}
			st.broken, st.failed, st.repairPending = true, true, false
		case e.Type == evidence.Repair && e.Outcome == evidence.Success:
			s.Repairs++
			if st == nil {
				st = &copyState{}
				copies[e.Object] = st
			}
			st.broken, st.repairPending = false, true
		case e.Type == evidence.FixityCheck && e.Outcome == evidence.Success && st != nil && st.repairPending:
			s.RepairsVerified++
			st.repairPending = false
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
		s.Error = err.Error()
	}
	if cp != nil {
		s.LogSize = cp.Size
	}
	for _, st := range copies {
		if st.failed {
			s.CorruptCopies++
			if st.broken {
				s.Unrepaired++
			}
		}
	}
	for k, n := range types {
		k.Count = n
		s.ByType = append(s.ByType, k)
	}
	slices.SortFunc(s.ByType, func(a, b TypeCount) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Outcome, b.Outcome))
	})
	for k, n := range agents {
		k.Count = n
		s.ByAgent = append(s.ByAgent, k)
	}
	slices.SortFunc(s.ByAgent, func(a, b AgentCount) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	return s, nil
}
