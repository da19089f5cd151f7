package bitreport

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/task"
)

// maxDeadLetterCause bounds the error text a dead-lettered check's row
// carries.
const maxDeadLetterCause = 500

// DeadLettered returns what Workman calls when it dead-letters a task
// (workman.Config.OnDeadLetter), so that a space's report does not wait
// silently — up to MaxRechecks × RecheckDelay, a week by default — for a
// check that will not run again until an operator redrives it. For a BIT
// task of a run the producer recorded for the task's space, whose item
// has no row in the run yet, it records an ERROR row (case 0) whose
// details say the check was dead-lettered, why, and that a redrive checks
// it again (the redriven check's row replaces it). The space's report then
// counts the item, is made with it as an ERROR line, and is notified like
// every ERROR report. Anything else (another type, no run, a run or space
// the producer did not record, an item that has a row) records nothing:
// a message's claim never becomes a row of a run that does not exist, nor
// replaces a verdict Mill reached.
func DeadLettered(l bitlog.Log) func(ctx context.Context, t *task.Task, reason string, cause error) error {
	return func(ctx context.Context, t *task.Task, reason string, cause error) error {
		if t == nil || t.Type != task.TypeBit {
			return nil
		}
		b, err := task.BitFrom(t)
		if err != nil || b.RunID == "" {
			return nil
		}
		if _, err := l.RunSpace(ctx, b.RunID, b.Account, b.StoreID, b.SpaceID); errors.Is(err, bitlog.ErrNoRun) {
			return nil
		} else if err != nil {
			return fmt.Errorf("bitreport: dead-lettered check: %w", err)
		}
		rows, _, err := l.Results(ctx, bitlog.Filter{RunID: b.RunID, Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID, ContentID: b.ContentID, Limit: 1})
		if err != nil {
			return fmt.Errorf("bitreport: dead-lettered check: %w", err)
		}
		if len(rows) > 0 {
			return nil
		}
		msg := "?"
		if cause != nil {
			msg = cause.Error()
		}
		if len(msg) > maxDeadLetterCause {
			msg = msg[:maxDeadLetterCause] + "…"
		}
		row := bitlog.Row{RunID: b.RunID, Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID, ContentID: b.ContentID,
			Result: bitlog.ResultError,
			Details: fmt.Sprintf("not checked: the check was dead-lettered (%s, at attempt %d): %s; redrive it (millctl dlq redrive) to check the item again",
				reason, t.Attempts+1, msg)}
		if err := l.Record(ctx, row); err != nil {
			return fmt.Errorf("bitreport: dead-lettered check: %w", err)
		}
		return nil
	}
}
