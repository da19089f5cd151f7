package dup

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/task"
)

// History is the part of the audit log (auditlog.Log) the processor reads
// to tell whether Mill's duplication put a destination-only space's
// content there (see the package doc, Destination-only spaces).
type History interface {
	Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*auditlog.Entry, error)
	SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) ([]auditlog.Entry, string, error)
}

// historyPage is the page size of the space histories read.
const historyPage = 1000

// sourceSpaceGone reports whether the task's source space does not exist.
func (p *Processor) sourceSpaceGone(ctx context.Context, j *job) (bool, error) {
	acls, err := p.acls(ctx, "source", j.src, j.d.SpaceID)
	return acls == nil && err == nil, err
}

// duplicatedItem reports whether the destination item's latest audit
// entry is a write by Mill's duplication (UserID).
func (p *Processor) duplicatedItem(ctx context.Context, j *job) (bool, error) {
	if p.cfg.History == nil {
		return false, nil
	}
	d := j.d
	var e *auditlog.Entry
	err := p.retry(ctx, "audit log lookup", func() error {
		var err error
		e, err = p.cfg.History.Latest(ctx, d.Account, d.DestStoreID, d.SpaceID, d.ContentID)
		return err
	})
	if errors.Is(err, auditlog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dup: audit log of %s/%s/%s/%s: %w", d.Account, d.DestStoreID, d.SpaceID, d.ContentID, err)
	}
	switch e.Action {
	case task.ActionAddContent, task.ActionCopyContent, task.ActionSetContentProperties:
		return e.UserID == UserID, nil
	}
	return false, nil
}

// duplicatedSpace reports whether Mill's duplication created the
// destination space as it is now: the latest CREATE_SPACE or DELETE_SPACE
// entry of the space in the audit log is a CREATE_SPACE by UserID.
func (p *Processor) duplicatedSpace(ctx context.Context, j *job) (bool, error) {
	if p.cfg.History == nil {
		return false, nil
	}
	d := j.d
	var last *auditlog.Entry
	token := ""
	for {
		var es []auditlog.Entry
		next := ""
		err := p.retry(ctx, "audit log space history", func() error {
			var err error
			es, next, err = p.cfg.History.SpaceHistory(ctx, d.Account, d.DestStoreID, d.SpaceID, token, historyPage)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("dup: audit log of space %s/%s/%s: %w", d.Account, d.DestStoreID, d.SpaceID, err)
		}
		for i := range es {
			if es[i].ContentID == "" && (es[i].Action == task.ActionCreateSpace || es[i].Action == task.ActionDeleteSpace) {
				last = &es[i]
			}
		}
		if next == "" {
			break
		}
		token = next
	}
	return last != nil && last.Action == task.ActionCreateSpace && last.UserID == UserID, nil
}
