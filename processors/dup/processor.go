package dup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"golang.org/x/sync/singleflight"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// Action is what a task made the processor do.
type Action string

// Actions.
const (
	None              Action = "none"                // already in step (or absent from both)
	CopyContent       Action = "copy"                // content copied to the destination
	CopyProperties    Action = "copy-properties"     // user properties copied
	DeleteContent     Action = "delete"              // destination-only item deleted
	CreateSpace       Action = "create-space"        // destination space created (and ACLs copied)
	SetSpaceACLs      Action = "set-space-acls"      // destination space ACLs updated
	DeleteSpace       Action = "delete-space"        // destination space deleted
	KeepNonEmptySpace Action = "keep-nonempty-space" // source space gone, destination not empty: left alone
	// KeepDestinationOnly: the source space is gone and Mill's records do
	// not show that its duplication put the destination item (or space)
	// there: left alone.
	KeepDestinationOnly Action = "keep-destination-only"
)

// Processor handles DUP tasks. It is safe for concurrent use.
type Processor struct {
	cfg Config
	log *slog.Logger
	// spaces makes the destination spaces, one creation at a time per
	// (account, store, space) however many tasks need the space at once.
	spaces singleflight.Group
}

var _ processors.Handler = (*Processor)(nil)

// New checks cfg (every problem at once) and returns a Processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dup: config: %w", err)
	}
	return &Processor{cfg: cfg, log: cfg.Logger.With("processor", "dup")}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "dup" }

// Handle implements processors.Handler: a task that is not a valid DUP task
// is a permanent error; otherwise see Process.
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	d, err := task.DupFrom(t)
	if err != nil {
		return processors.Permanent(fmt.Errorf("dup: %w", err))
	}
	_, err = p.Process(ctx, d)
	return err
}

// job is one task with its stores opened.
type job struct {
	d   task.Dup
	pol *policy.Policy // the account's policy in force
	src ReadOnly
	dst storage.Provider // audited
	log *slog.Logger
}

// mayDestroy refuses (permanently) to delete from or overwrite the
// destination when it is the source of a store policy of the space.
func (j *job) mayDestroy(what string) error {
	if err := j.pol.MayDestroy(j.d.Account, j.d.SpaceID, j.d.DestStoreID, what); err != nil {
		return processors.Permanent(fmt.Errorf("dup: %w", err))
	}
	return nil
}

// Process carries out one DUP task and reports what it did. Before any
// store is touched the task is checked: its IDs must be valid, the
// policies in force must allow the duplication (policy.Authorize) and both
// stores must be registered; a task that fails a check is a permanent error
// naming what it broke.
func (p *Processor) Process(ctx context.Context, d task.Dup) (Action, error) {
	if d.StoreID == d.DestStoreID {
		return None, processors.Permanentf("dup: %s/%s: source and destination are both store %q", d.Account, d.SpaceID, d.StoreID)
	}
	if err := validIDs(d); err != nil {
		return None, processors.Permanent(fmt.Errorf("dup: %s/%s→%s: %w", d.Account, d.StoreID, d.DestStoreID, err))
	}
	pol, err := policy.Authorize(ctx, p.cfg.Policies, d.Account, d.SpaceID, d.StoreID, d.DestStoreID)
	if _, refused := errors.AsType[*policy.Refusal](err); refused {
		return None, processors.Permanent(fmt.Errorf("dup: %w", err))
	}
	if err != nil {
		return None, fmt.Errorf("dup: reading the duplication policies: %w", err)
	}
	src, err := p.cfg.Opener.Open(ctx, d.Account, d.StoreID)
	if err != nil {
		return None, fmt.Errorf("dup: open source store %s/%s: %w", d.Account, d.StoreID, err)
	}
	dst, err := p.cfg.Opener.Open(ctx, d.Account, d.DestStoreID)
	if err != nil {
		return None, fmt.Errorf("dup: open destination store %s/%s: %w", d.Account, d.DestStoreID, err)
	}
	adst, err := p.cfg.Audit(dst, d.Account, d.DestStoreID, d.StoreID)
	if err != nil {
		return None, fmt.Errorf("dup: audit destination store %s/%s: %w", d.Account, d.DestStoreID, err)
	}
	j := &job{d: d, pol: pol, src: NewReadOnly(src), dst: adst, log: p.log.With(
		"account", d.Account, "store_id", d.StoreID, "dest_store_id", d.DestStoreID, "space_id", d.SpaceID)}
	var a Action
	if d.ContentID == "" {
		a, err = p.space(ctx, j)
	} else {
		j.log = j.log.With("content_id", storage.ShortID(d.ContentID))
		a, err = p.content(ctx, j)
	}
	if err != nil {
		return a, err // an invalid ID a store refused is permanent (processors.IsPermanent)
	}
	if a != None {
		j.log.Info("duplication applied", "action", string(a))
	}
	return a, nil
}

// content handles a content-level task.
func (p *Processor) content(ctx context.Context, j *job) (Action, error) {
	d := j.d
	si, err := p.head(ctx, "source", j.src, d.SpaceID, d.ContentID)
	if err != nil {
		return None, err
	}
	di, err := p.head(ctx, "destination", j.dst, d.SpaceID, d.ContentID)
	if err != nil {
		return None, err
	}
	item := d.Account + "/" + d.SpaceID + "/" + d.ContentID
	switch {
	case si == nil && di == nil:
		return None, nil
	case si == nil:
		if err := j.mayDestroy("delete " + item); err != nil {
			return None, err
		}
		return p.deleteContent(ctx, j)
	case di == nil:
		return CopyContent, p.copyContent(ctx, j, si, nil)
	case !InSync(si, di) || mimeType(di) != mimeType(si):
		// Content or mimetype differ: a copy replaces both (a provider
		// changes an item's mimetype only by writing it).
		if err := j.mayDestroy("overwrite " + item); err != nil {
			return None, err
		}
		return CopyContent, p.copyContent(ctx, j, si, di)
	case !storage.PropertiesEqual(si.Properties, di.Properties):
		if err := j.mayDestroy("overwrite the properties of " + item); err != nil {
			return None, err
		}
		props := storage.UserProperties(si.Properties)
		err := p.retry(ctx, "set destination properties", func() error {
			return j.dst.SetProperties(ctx, d.SpaceID, d.ContentID, props)
		})
		return CopyProperties, err
	}
	return None, nil
}

// InSync reports whether two copies of an item, as Head reports them, hold
// the same content by the one rule (storage.ChecksumOf): the same MD5 —
// the provider's own digest where it has one, else the recorded MD5 — and
// neither copy's recorded MD5 contradicted by its provider. A copy whose
// bytes were replaced with its recorded MD5 kept is in sync with nothing.
func InSync(a, b *storage.Info) bool {
	ca, cb := storage.ChecksumOf(a, nil), storage.ChecksumOf(b, nil)
	return ca.MD5 == cb.MD5 && !ca.ClaimContradicted && !cb.ClaimContradicted
}

// mimeType is the item's mimetype, the providers' default when none is
// recorded.
func mimeType(i *storage.Info) string {
	if i.MimeType == "" {
		return storage.DefaultMimeType
	}
	return i.MimeType
}

// validIDs checks the task's IDs the way every provider does, so a task no
// store could accept is refused before any store is asked.
func validIDs(d task.Dup) error {
	if err := storage.ValidateSpaceID(d.SpaceID); err != nil {
		return err
	}
	if d.ContentID != "" {
		return storage.ValidateContentID(d.ContentID)
	}
	return nil
}

// head reads an item; a missing item (or space) is (nil, nil).
func (p *Processor) head(ctx context.Context, which string, s storage.Provider, space, id string) (*storage.Info, error) {
	var info *storage.Info
	err := p.retry(ctx, "head "+which, func() error {
		var err error
		info, err = s.Head(ctx, space, id)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return info, err
}

// deleteContent deletes a destination-only item unless the source's
// content index says the item should be at the source, or the source space
// is gone and the audit log does not show Mill's duplication wrote the
// item (KeepDestinationOnly).
func (p *Processor) deleteContent(ctx context.Context, j *job) (Action, error) {
	d := j.d
	var live bool
	err := p.retry(ctx, "content index lookup", func() error {
		var err error
		live, err = p.cfg.Live.IsLive(ctx, d.Account, d.StoreID, d.SpaceID, d.ContentID)
		return err
	})
	if err != nil {
		return None, fmt.Errorf("dup: %s/%s/%s/%s: %w", d.Account, d.StoreID, d.SpaceID, d.ContentID, err)
	}
	if live {
		return None, fmt.Errorf("%w: %s/%s/%s/%s is in store %s but not in store %s; not deleting it from store %s",
			ErrMissingFromSource, d.Account, d.StoreID, d.SpaceID, d.ContentID, d.DestStoreID, d.StoreID, d.DestStoreID)
	}
	if gone, err := p.sourceSpaceGone(ctx, j); err != nil || gone {
		if err != nil {
			return None, err
		}
		if ours, err := p.duplicatedItem(ctx, j); err != nil || !ours {
			if err == nil {
				j.log.Info("source space gone and the audit log does not show Mill's duplication wrote this destination item; left alone")
			}
			return KeepDestinationOnly, err
		}
	}
	err = p.retry(ctx, "delete from destination", func() error {
		return j.dst.Delete(ctx, d.SpaceID, d.ContentID)
	})
	return DeleteContent, err
}

// noServerSideCopy hides a provider's ServerSideCopier (and Unwrap) so
// storage.Copy streams.
type noServerSideCopy struct{ storage.Provider }

// copyContent copies the item from the source (as si describes it) over
// the destination (as di describes it: nil, absent) and verifies the
// destination afterwards. The copy reads neither again: it is
// conditional on both (storage.Seen; ErrChanged when either changed).
func (p *Processor) copyContent(ctx context.Context, j *job, si, di *storage.Info) error {
	d := j.d
	if sc := storage.ChecksumOf(si, nil); sc.ClaimContradicted {
		// The source is not the copy Mill wrote: never spread it.
		return processors.Permanent(fmt.Errorf("%w: %s/%s/%s/%s: %s; nothing was written to store %s",
			ErrSourceCorrupt, d.Account, d.StoreID, d.SpaceID, d.ContentID, sc, d.DestStoreID))
	}
	if !si.Readable() {
		return p.archived(ctx, j, si)
	}
	var dst storage.Provider = j.dst
	if p.cfg.DisableServerSideCopy {
		dst = noServerSideCopy{j.dst}
	}
	// Both items as just read: the copy reads neither again (a resumed
	// copy reads nothing before its checkpoint).
	opts := storage.CopyOptions{Transfer: p.cfg.Transfer, Source: si, Dest: di, DestRead: true}
	if p.cfg.Checkpoints != nil {
		opts.Resume = &storage.Resume{Checkpoints: p.cfg.Checkpoints, MinSize: p.cfg.ResumeMinSize,
			Key: storage.CheckpointKey("dup", d.Account, d.StoreID, d.DestStoreID, d.SpaceID, d.ContentID)}
		if p.cfg.ContinueAfter > 0 {
			stop, done := make(chan struct{}), make(chan struct{})
			defer close(done)
			tm := p.cfg.Clock.NewTimer(p.cfg.ContinueAfter)
			go func() {
				defer tm.Stop()
				select {
				case <-tm.C():
					close(stop)
				case <-done:
				}
			}()
			opts.Resume.Stop = stop
		}
	}
	ensured := false
	var out *storage.Info
	err := p.retry(ctx, "copy", func() error {
		var err error
		out, err = storage.CopyWith(ctx, j.src, d.SpaceID, d.ContentID, dst, d.SpaceID, opts)
		if errors.Is(err, storage.ErrNotFound) && !ensured {
			// The destination space may not exist yet (its space-level
			// task may not have run): make it, then copy again.
			st, serr := p.ensureSpace(ctx, j)
			if serr != nil {
				return serr
			}
			if st != sourceSpaceGone {
				ensured = true
				out, err = storage.CopyWith(ctx, j.src, d.SpaceID, d.ContentID, dst, d.SpaceID, opts)
			}
		}
		return err
	})
	switch {
	case errors.Is(err, storage.ErrSuspended):
		// A continuation: the next receipt resumes from the checkpoint.
		return processors.Release(fmt.Sprintf("the copy of %s/%s/%s/%s to store %s ran %v: continued from its checkpoint by the next receipt",
			d.Account, d.StoreID, d.SpaceID, d.ContentID, d.DestStoreID, p.cfg.ContinueAfter))
	case errors.Is(err, storage.ErrChecksumMismatch):
		return processors.Permanent(fmt.Errorf("%w: %s/%s/%s/%s (recorded MD5 %s); nothing was written to store %s: %w",
			ErrSourceCorrupt, d.Account, d.StoreID, d.SpaceID, d.ContentID, si.Checksum, d.DestStoreID, err))
	case errors.Is(err, storage.ErrArchived):
		// Archived since it was read (a lifecycle transition).
		return p.archived(ctx, j, si)
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrChanged):
		// The source item (or space) went away, or an item changed, since
		// it was read: the retry of this task deals with what is there
		// then.
		return fmt.Errorf("dup: copy %s/%s/%s/%s: the source changed during the copy: %w", d.Account, d.StoreID, d.SpaceID, d.ContentID, err)
	case err != nil:
		return fmt.Errorf("dup: copy %s/%s/%s/%s to store %s: %w", d.Account, d.StoreID, d.SpaceID, d.ContentID, d.DestStoreID, err)
	}
	after, err := p.head(ctx, "destination", j.dst, d.SpaceID, d.ContentID)
	if err != nil {
		return fmt.Errorf("dup: verify %s/%s/%s/%s at store %s: %w", d.Account, d.StoreID, d.SpaceID, d.ContentID, d.DestStoreID, err)
	}
	// The source's MD5 by the rule; the copy's own when the source gives
	// none (storage.Copy then hashed the stream and checked the write).
	want := storage.ChecksumOf(si, nil).MD5
	if want == "" && out != nil {
		want = storage.ChecksumOf(out, nil).MD5
	}
	if after == nil || !storage.ChecksumOf(after, nil).Holds(want) {
		got := "nothing"
		if after != nil {
			got = storage.ChecksumOf(after, nil).String()
		}
		return fmt.Errorf("%w: %s/%s/%s at store %s holds %s after the copy, the source MD5 %s",
			ErrDestinationChecksum, d.Account, d.SpaceID, d.ContentID, d.DestStoreID, got, want)
	}
	return nil
}

// archived answers a copy whose source bytes cannot be read now: a
// permanent ErrSourceArchived naming the storage class and what was done —
// a restore asked for (Config.RestoreArchivedDays > 0, the source provider
// a storage.Restorer) or nothing. A restore request changes no content of
// the source: S3 makes a temporary readable copy beside the archived
// object, so it is made on the provider under the read-only view.
func (p *Processor) archived(ctx context.Context, j *job, si *storage.Info) error {
	d := j.d
	item := fmt.Sprintf("%s/%s/%s/%s", d.Account, d.StoreID, d.SpaceID, d.ContentID)
	class := si.StorageClass
	if class == "" {
		class = "archival"
	}
	days := p.cfg.RestoreArchivedDays
	r, ok := storage.Unwrap(j.src).(storage.Restorer)
	switch {
	case si.Restore == storage.RestoreOngoing:
		return processors.Permanent(fmt.Errorf("%w: %s is in storage class %s and its restore is in progress; not copied to store %s: redrive this task once it is restored",
			ErrSourceArchived, item, class, d.DestStoreID))
	case days <= 0 || !ok:
		return processors.Permanent(fmt.Errorf("%w: %s is in storage class %s; not copied to store %s: restore it (or run workman with --dup-restore-days) and redrive this task",
			ErrSourceArchived, item, class, d.DestStoreID))
	}
	var started bool
	err := p.retry(ctx, "restore request", func() error {
		var err error
		started, err = r.RequestRestore(ctx, d.SpaceID, d.ContentID, days, storage.RestoreBulk)
		return err
	})
	if err != nil {
		return fmt.Errorf("dup: request a restore of %s: %w", item, err)
	}
	j.log.Warn("archived source: restore requested", "storage_class", class, "days", days, "started", started)
	return processors.Permanent(fmt.Errorf("%w: %s is in storage class %s; not copied to store %s yet: a restore for %d days was requested (S3 Bulk: hours, up to 48 for Deep Archive); redrive this task once it is restored",
		ErrSourceArchived, item, class, d.DestStoreID, days))
}

// final reports whether err is an answer rather than a transient failure.
func final(err error) bool {
	for _, e := range []error{
		storage.ErrNotFound, storage.ErrChecksumMismatch, storage.ErrInvalidID,
		storage.ErrPropertiesTooLarge, storage.ErrSpaceNotEmpty, ErrReadOnly, storage.ErrSuspended, storage.ErrChanged,
		context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return processors.IsPermanent(err)
}

// retry calls fn until it succeeds, fails with a final error, the attempts
// run out or ctx ends; the waits double from Retry.Base up to Retry.Max on
// the configured clock.
func (p *Processor) retry(ctx context.Context, what string, fn func() error) error {
	r := p.cfg.Retry
	wait := r.Base
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || final(err) || attempt >= r.Attempts {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		p.log.Debug("transient storage error; retrying", "operation", what, "attempt", attempt, "wait", wait, "error", err)
		if serr := clock.Sleep(ctx, p.cfg.Clock, wait); serr != nil {
			return err
		}
		wait = min(wait*2, r.Max)
	}
}
