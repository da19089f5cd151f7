package wiring

import (
	"context"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// RunOutcomes returns the Workman outcome observer that records each
// task's outcome against its producer run (pkg/runs) and completes the
// runs it finishes: report in d.Reports, notification through d.Notifier.
// nil when d has no record of runs.
func RunOutcomes(d *Deps) workman.OutcomeObserver {
	if d.Runs == nil {
		return nil
	}
	dd := d.WithDefaults()
	return runOutcomes{&runs.Recorder{Store: d.Runs, Reports: d.Reports, Notifier: dd.Notifier, Prices: d.Prices, Clock: dd.Clock, Logger: dd.Logger}}
}

type runOutcomes struct{ r *runs.Recorder }

var outcomeStates = map[workman.Outcome]runs.State{
	workman.OutcomeDone:         runs.StateDone,
	workman.OutcomeRetry:        runs.StateFailed,
	workman.OutcomeDeadLettered: runs.StateDead,
}

func (o runOutcomes) TaskOutcome(ctx context.Context, x workman.TaskOutcome) error {
	if x.Outcome == workman.OutcomeContinued {
		o.r.Continued(ctx, x.Task, x.Requests)
		return nil
	}
	st, ok := outcomeStates[x.Outcome]
	if !ok {
		return nil
	}
	msg := ""
	if x.Err != nil {
		msg = x.Err.Error()
	}
	return o.r.ObserveCounted(ctx, x.Task, st, x.Reason, msg, x.Attempts, x.Requests)
}

// CountsRequests implements workman.RequestCounter: the requests of a
// task a run counts are counted.
func (o runOutcomes) CountsRequests(t *task.Task) bool { return runs.Counted(t) != "" }
