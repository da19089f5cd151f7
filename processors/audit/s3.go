package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// handleS3 expands an S3 event notification into audit events. Every
// record is checked against a HEAD of its object before it is acted on
// (see the package doc); records the store contradicts are not acted on
// and, once the others are done, make the task a permanent error naming
// them.
func (p *Processor) handleS3(ctx context.Context, raw string) error {
	recs, err := s3event.Parse([]byte(raw))
	if err != nil {
		return processors.Permanent(fmt.Errorf("audit: S3 event: %w", err))
	}
	if p.cfg.Resolver == nil {
		return processors.Permanentf("audit: S3 event for bucket %q received, but this processor has no store resolver configured", recs[0].Bucket)
	}
	var refused []error
	for _, r := range recs {
		loc, err := p.cfg.Resolver.Resolve(r.Bucket, r.Key)
		switch {
		case errors.Is(err, s3event.ErrIgnored):
			p.cfg.Logger.DebugContext(ctx, "audit: S3 event for a non-content key ignored", "bucket", r.Bucket, "key", r.Key, "reason", err)
			continue
		case errors.Is(err, s3event.ErrUnknownBucket):
			return processors.Permanent(fmt.Errorf("audit: S3 event %s for s3://%s/%s: no store is registered for bucket %q: %w",
				r.EventName, r.Bucket, r.Key, r.Bucket, err))
		case err != nil:
			return fmt.Errorf("audit: S3 event for s3://%s/%s: %w", r.Bucket, r.Key, err)
		}
		e, ok, err := p.entryFromS3(ctx, r, loc)
		if errors.Is(err, s3event.ErrNotConfirmed) {
			p.cfg.Logger.WarnContext(ctx, "audit: S3 event contradicted by the store; not acted on", "bucket", r.Bucket, "key", r.Key,
				"event", r.EventName, "principal", r.PrincipalID, "error", err)
			refused = append(refused, err)
			continue
		}
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := p.Process(ctx, e); err != nil {
			return err
		}
	}
	if len(refused) > 0 {
		return processors.Permanent(fmt.Errorf("audit: S3 event: %w", errors.Join(refused...)))
	}
	return nil
}

// entryFromS3 builds the audit event of one record once a HEAD of the
// object confirms it; ok is false when the record is to be skipped (the
// object changed since, or an echo). An error wrapping
// s3event.ErrNotConfirmed reports a record the store contradicts.
func (p *Processor) entryFromS3(ctx context.Context, r s3event.Record, loc s3event.Location) (auditlog.Entry, bool, error) {
	where := fmt.Sprintf("s3://%s/%s", r.Bucket, r.Key)
	// The event's own time, but never later than now: a forged time in the
	// future would pin the content index row (an older event changes
	// nothing) and hide the real changes that follow.
	at := p.notLater(r.EventTime)
	e := auditlog.Entry{Account: loc.Account, StoreID: loc.StoreID, SpaceID: loc.SpaceID, ContentID: loc.ContentID,
		UserID: r.UserID(), Time: at, StoreType: string(storage.KindS3)}
	if !r.Created() && !r.Removed() {
		p.cfg.Logger.InfoContext(ctx, "audit: S3 event type not audited", "event", r.EventName, "bucket", r.Bucket, "key", r.Key)
		return e, false, nil
	}
	prov, err := p.cfg.Stores.Open(ctx, loc.Account, loc.StoreID)
	if err != nil {
		return e, false, fmt.Errorf("audit: S3 event %s: open store: %w", where, err)
	}
	info, err := prov.Head(ctx, loc.SpaceID, loc.ContentID)
	var cur *s3event.Object
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return e, false, fmt.Errorf("audit: S3 event %s: %w", where, err)
	default:
		cur = &s3event.Object{Modified: info.Modified}
	}
	if err := s3event.Confirm(r, cur); errors.Is(err, s3event.ErrSuperseded) {
		p.cfg.Logger.InfoContext(ctx, "audit: S3 event superseded by a later change; skipped", "bucket", r.Bucket, "key", r.Key, "reason", err)
		return e, false, nil
	} else if err != nil {
		return e, false, err
	}
	if r.Created() {
		// Everything but who and when comes from the HEAD, not the event.
		e.Action = task.ActionAddContent
		e.Checksum = checksumOf(info)
		size := info.Size
		e.Size = &size
		e.MimeType = info.MimeType
		e.Properties = storage.UserProperties(info.Properties)
	} else {
		e.Action = task.ActionDeleteContent
	}
	echo, err := p.echo(ctx, e)
	if err != nil {
		return e, false, fmt.Errorf("audit: S3 event %s: %w", where, err)
	}
	if echo {
		p.cfg.Logger.DebugContext(ctx, "audit: S3 event already audited by Mill's own write", "bucket", r.Bucket, "key", r.Key, "action", e.Action)
		return e, false, nil
	}
	return e, true, nil
}

// echo applies the echo rule of the package doc.
func (p *Processor) echo(ctx context.Context, e auditlog.Entry) (bool, error) {
	latest, err := p.cfg.Log.Latest(ctx, e.Account, e.StoreID, e.SpaceID, e.ContentID)
	if errors.Is(err, auditlog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if sameKey(latest.Key(), e.Key()) || latest.Time.Before(e.Time.Add(-p.cfg.EchoWindow)) {
		return false, nil
	}
	switch e.Action {
	case task.ActionAddContent:
		switch latest.Action {
		case task.ActionAddContent, task.ActionCopyContent, task.ActionSetContentProperties:
			return e.Checksum != "" && latest.Checksum == e.Checksum, nil
		}
	case task.ActionDeleteContent:
		return latest.Action == task.ActionDeleteContent, nil
	}
	return false, nil
}

func sameKey(a, b auditlog.Key) bool {
	return a.Account == b.Account && a.StoreID == b.StoreID && a.SpaceID == b.SpaceID && a.ContentID == b.ContentID &&
		a.Time.Equal(b.Time) && a.Action == b.Action && a.Hash == b.Hash
}
