package dup

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/millfleet/mill/pkg/storage"
)

// space handles a space-level task.
func (p *Processor) space(ctx context.Context, j *job) (Action, error) {
	d := j.d
	srcACLs, err := p.acls(ctx, "source", j.src, d.SpaceID)
	if err != nil {
		return None, err
	}
	if srcACLs != nil {
		dstACLs, err := p.acls(ctx, "destination", j.dst, d.SpaceID)
		if err != nil {
			return None, err
		}
		if dstACLs == nil {
			st, err := p.ensureSpace(ctx, j)
			switch {
			case err != nil || st == spaceCreated:
				return CreateSpace, err
			case st == sourceSpaceGone:
				return None, nil // the next space task deletes it
			}
			// Another task made it meanwhile: compare its ACLs.
			if dstACLs, err = p.acls(ctx, "destination", j.dst, d.SpaceID); err != nil || dstACLs == nil {
				return None, err
			}
		}
		if !maps.Equal(srcACLs, dstACLs) {
			if err := j.mayDestroy("overwrite the ACLs of space " + d.Account + "/" + d.SpaceID); err != nil {
				return None, err
			}
			return SetSpaceACLs, p.retry(ctx, "set destination space ACLs", func() error {
				return j.dst.SetSpaceACLs(ctx, d.SpaceID, srcACLs)
			})
		}
		return None, nil
	}
	// The source space is gone.
	var ids []string
	err = p.retry(ctx, "list destination space", func() error {
		var err error
		ids, _, err = j.dst.ListContent(ctx, d.SpaceID, "", 1)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return None, nil // gone from both
	}
	if err != nil {
		return None, fmt.Errorf("dup: %s/%s: %w", d.Account, d.SpaceID, err)
	}
	if len(ids) > 0 {
		j.log.Warn("source space is gone but the destination space still holds content; leaving it alone",
			"first_content_id", ids[0])
		return KeepNonEmptySpace, nil
	}
	if err := j.mayDestroy("delete space " + d.Account + "/" + d.SpaceID); err != nil {
		return None, err
	}
	if ours, err := p.duplicatedSpace(ctx, j); err != nil || !ours {
		if err == nil {
			j.log.Info("source space gone and the audit log does not show Mill's duplication created this destination space; left alone")
		}
		return KeepDestinationOnly, err
	}
	err = p.retry(ctx, "delete destination space", func() error { return j.dst.DeleteSpace(ctx, d.SpaceID) })
	if errors.Is(err, storage.ErrSpaceNotEmpty) {
		j.log.Warn("destination space filled up while being deleted; leaving it alone")
		return KeepNonEmptySpace, nil
	}
	return DeleteSpace, err
}

// acls reads the ACLs of a space; a missing space is (nil, nil) and an
// existing one never nil.
func (p *Processor) acls(ctx context.Context, which string, s storage.Provider, space string) (map[string]string, error) {
	var acls map[string]string
	err := p.retry(ctx, "read "+which+" space ACLs", func() error {
		var err error
		acls, err = s.SpaceACLs(ctx, space)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dup: %s space %s: %w", which, space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	return acls, nil
}

// spaceState is what ensureSpace found or did.
type spaceState int

const (
	spaceCreated    spaceState = iota // created (with the source's ACLs)
	spaceExisted                      // the destination space was there
	sourceSpaceGone                   // nothing to create it from
)

// ensureSpace makes sure the destination space exists, creating it with
// the source's ACLs when the source space exists. Concurrent calls for one
// (account, store, space) share one creation, and the destination is
// looked at first, so the space is created — and CREATE_SPACE audited —
// once, not once per DUP task of a new space. Across processes the look
// before the creation keeps duplicates to a race between two workers' HEAD
// and PUT; creating an existing space is harmless (storage.Provider).
func (p *Processor) ensureSpace(ctx context.Context, j *job) (spaceState, error) {
	d := j.d
	v, err, _ := p.spaces.Do(d.Account+"\x00"+d.DestStoreID+"\x00"+d.SpaceID, func() (any, error) {
		dstACLs, err := p.acls(ctx, "destination", j.dst, d.SpaceID)
		if err != nil {
			return nil, err
		}
		if dstACLs != nil {
			return spaceExisted, nil
		}
		srcACLs, err := p.acls(ctx, "source", j.src, d.SpaceID)
		if err != nil {
			return nil, err
		}
		if srcACLs == nil {
			return sourceSpaceGone, nil
		}
		if err := p.retry(ctx, "create destination space", func() error { return j.dst.CreateSpace(ctx, d.SpaceID) }); err != nil {
			return nil, fmt.Errorf("dup: create space %s/%s in store %s: %w", d.Account, d.SpaceID, d.DestStoreID, err)
		}
		if len(srcACLs) > 0 {
			if err := p.retry(ctx, "set destination space ACLs", func() error { return j.dst.SetSpaceACLs(ctx, d.SpaceID, srcACLs) }); err != nil {
				return nil, fmt.Errorf("dup: set ACLs of space %s/%s in store %s: %w", d.Account, d.SpaceID, d.DestStoreID, err)
			}
		}
		return spaceCreated, nil
	})
	if err != nil {
		return 0, err
	}
	return v.(spaceState), nil
}
