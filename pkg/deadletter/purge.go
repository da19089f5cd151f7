package deadletter

import (
	"context"
	"fmt"
	"slices"

	"github.com/millfleet/mill/pkg/queue"
)

// Purge says what to purge.
type Purge struct {
	// Filter selects the messages to delete. The empty filter purges the
	// whole queue at once (queue.Queue.Purge).
	Filter Filter
	// Confirm, when set, is asked before anything is deleted, with how
	// many messages would be: the matching ones while they are held (and
	// how many were looked at), or — for the whole queue — its depth
	// (looked is then -1). false cancels.
	Confirm func(n, looked int) bool
	// Each, when set, is called with every entry deleted (not for a
	// purge of the whole queue).
	Each func(e *Entry)
}

// PurgeResult is a purge's outcome.
type PurgeResult struct {
	// All: the whole queue was purged (about Deleted messages: its depth
	// before; SQS takes up to a minute).
	All bool
	// Deleted and Failed count the matching messages; Looked is every
	// message the scan looked at; Cancelled: Confirm said no.
	Deleted, Failed, Looked int
	Cancelled               bool
}

// Purge deletes the messages p selects, after Confirm; their claim-check
// blobs stay until the claims prefix's expiry. The error says what
// failed.
func (in *Inspector) Purge(ctx context.Context, p Purge) (PurgeResult, error) {
	if p.Filter.Empty() {
		d, err := in.Depth(ctx)
		if err != nil {
			return PurgeResult{}, err
		}
		res := PurgeResult{All: true, Deleted: int(d.Total()), Looked: -1}
		if p.Confirm != nil && !p.Confirm(res.Deleted, -1) {
			return PurgeResult{All: true, Cancelled: true, Looked: -1}, nil
		}
		if err := in.cfg.Queue.Purge(ctx); err != nil {
			return PurgeResult{}, fmt.Errorf("deadletter: purge %s: %w", in.QueueName(), err)
		}
		return res, nil
	}
	s := in.Scan()
	defer s.Close(ctx)
	var match []*Entry
	if _, err := in.each(ctx, s, p.Filter, func(es []*Entry) (bool, error) {
		match = append(match, es...)
		return false, nil
	}); err != nil {
		return PurgeResult{Looked: s.Looked()}, err
	}
	res := PurgeResult{Looked: s.Looked()}
	if len(match) == 0 {
		return res, nil
	}
	if p.Confirm != nil && !p.Confirm(len(match), s.Looked()) {
		res.Cancelled = true
		return res, nil
	}
	err := s.Delete(ctx, match...)
	failed := queue.FailedIndexes(err, len(match))
	res.Failed, res.Deleted = len(failed), len(match)-len(failed)
	if p.Each != nil {
		for i, e := range match {
			if !slices.Contains(failed, i) {
				p.Each(e)
			}
		}
	}
	return res, err
}

// Summary says what a purge of the queue called name did.
func (r PurgeResult) Summary(name string) string {
	switch {
	case r.Cancelled:
		return "cancelled, nothing deleted"
	case r.All:
		return fmt.Sprintf("%s purged (about %d messages; SQS may take up to a minute)", name, r.Deleted)
	case r.Deleted+r.Failed == 0:
		return fmt.Sprintf("no matching messages (%d looked at)", r.Looked)
	}
	return fmt.Sprintf("%d deleted, %d failed", r.Deleted, r.Failed)
}
