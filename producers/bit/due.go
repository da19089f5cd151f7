package bit

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/stores"
)

// Copies due (Config.SkipCovered). Inside a space that is checked, a bite
// queues only the copies that are due: the listing's page is merged with
// the space's verdicts (bitlog.Verdicts) read from the bite's marker on,
// both in ascending byte-wise content-id order (the storage.Provider
// contract; bit_verdict compares IDs with COLLATE "C"), so a bite holds
// its page of IDs and one page of verdicts, whatever the size of the
// space. A copy is due when it has no fresh verdict made before the run
// started, or one that falls out of its target (the archived interval
// when the verdict says the copy was archived) before the run's start
// plus CoveredMargin; an archived copy of a store whose archived method
// is "none" is never within target, so always due. A verdict made since
// the run started does not spare a copy: a bite sent again after a crash
// queues what it queued the first time, whatever the tasks it sent have
// since recorded. A listing page that breaks the order is not merged:
// its every copy is due.

// dueFilter tells which copies of one bite's listing page are due.
type dueFilter struct {
	vs                 bitlog.Verdicts
	account, store, sp string
	target             stores.Fixity
	start, horizon     time.Time

	page  []bitlog.Verdict
	i     int
	after string // the last content ID of the verdicts read
	more  bool
	limit int
}

// dueFilter returns the filter of a bite of d's space listing after
// marker, or nil when every copy is due (no SkipCovered).
func (p *Producer) dueFilter(d morselData, run time.Time, marker string, page int) *dueFilter {
	if !p.cfg.SkipCovered || p.cfg.Verdicts == nil {
		return nil
	}
	return &dueFilter{vs: p.cfg.Verdicts, account: d.Account, store: d.StoreID, sp: d.SpaceID,
		target: p.target(d.Account, d.StoreID), start: run, horizon: run.Add(p.cfg.CoveredMargin),
		after: marker, more: true, limit: bitlog.PageSize(max(page, 1))}
}

// ordered reports whether ids are strictly ascending after marker: the
// order the merge needs.
func ordered(marker string, ids []string) bool {
	for _, id := range ids {
		if id <= marker {
			return false
		}
		marker = id
	}
	return true
}

// due reports whether the copy id is due; ids must be asked in strictly
// ascending order, after the filter's marker.
func (f *dueFilter) due(ctx context.Context, id string) (bool, error) {
	v, err := f.find(ctx, id)
	if err != nil {
		return false, err
	}
	if v == nil || !v.CheckedAt.Before(f.start) {
		return true, nil
	}
	if v.Archived && f.target.ArchivedMethod == stores.ArchivedNone {
		return true, nil
	}
	return !v.CheckedAt.Add(f.target.IntervalFor(v.Archived)).After(f.horizon), nil
}

// find returns the verdict of id, or nil, reading the verdicts page by
// page; verdicts of IDs the listing no longer shows are passed over.
func (f *dueFilter) find(ctx context.Context, id string) (*bitlog.Verdict, error) {
	for {
		if f.i == len(f.page) {
			if !f.more {
				return nil, nil
			}
			page, more, err := f.vs.Verdicts(ctx, f.account, f.store, f.sp, f.after, f.limit)
			if err != nil {
				return nil, fmt.Errorf("bit: verdicts of %s/%s/%s: %w", f.account, f.store, f.sp, err)
			}
			for _, v := range page {
				if v.ContentID <= f.after {
					return nil, fmt.Errorf("bit: verdicts of %s/%s/%s out of order: %q after %q", f.account, f.store, f.sp, v.ContentID, f.after)
				}
				f.after = v.ContentID
			}
			f.page, f.i, f.more = page, 0, more && len(page) > 0
			if len(page) == 0 {
				return nil, nil
			}
		}
		v := &f.page[f.i]
		switch {
		case v.ContentID < id:
			f.i++
		case v.ContentID == id:
			f.i++
			return v, nil
		default:
			return nil, nil
		}
	}
}

// filterDue returns the IDs of the page that are due (all of them
// without a filter, or when the page breaks the listing order), and how
// many were left out.
func (p *Producer) filterDue(ctx context.Context, f *dueFilter, marker string, ids []string) (map[string]bool, int64, error) {
	if f == nil {
		return nil, 0, nil
	}
	if !ordered(marker, ids) {
		p.log.Warn("listing page out of byte-wise order: every copy of it is due", "account", f.account,
			"store_id", f.store, "space_id", f.sp, "after", marker)
		return nil, 0, nil
	}
	due := make(map[string]bool, len(ids))
	var within int64
	for _, id := range ids {
		ok, err := f.due(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			due[id] = true
		} else {
			within++
		}
	}
	return due, within, nil
}
