package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// handleS3 expands an S3 event notification into audit events.
func (p *Processor) handleS3(ctx context.Context, raw string) error {
	recs, err := s3event.Parse([]byte(raw))
	if err != nil {
		return processors.Permanent(fmt.Errorf("audit: S3 event: %w", err))
	}
	if p.cfg.Resolver == nil {
		return processors.Permanentf("audit: S3 event for bucket %q received, but this processor has no store resolver configured", recs[0].Bucket)
	}
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
	return nil
}

// entryFromS3 builds the audit event of one record; ok is false when the
// record is to be skipped (the object is gone already, or an echo).
func (p *Processor) entryFromS3(ctx context.Context, r s3event.Record, loc s3event.Location) (auditlog.Entry, bool, error) {
	where := fmt.Sprintf("s3://%s/%s", r.Bucket, r.Key)
	e := auditlog.Entry{Account: loc.Account, StoreID: loc.StoreID, SpaceID: loc.SpaceID, ContentID: loc.ContentID,
		UserID: r.PrincipalID, Time: r.EventTime, StoreType: string(storage.KindS3)}
	switch {
	case r.Created():
		prov, err := p.cfg.Stores.Open(ctx, loc.Account, loc.StoreID)
		if err != nil {
			return e, false, fmt.Errorf("audit: S3 event %s: open store: %w", where, err)
		}
		info, err := prov.Head(ctx, loc.SpaceID, loc.ContentID)
		if errors.Is(err, storage.ErrNotFound) {
			p.cfg.Logger.InfoContext(ctx, "audit: object of an S3 create event is gone; its remove event will follow", "bucket", r.Bucket, "key", r.Key)
			return e, false, nil
		}
		if err != nil {
			return e, false, fmt.Errorf("audit: S3 event %s: %w", where, err)
		}
		e.Action = task.ActionAddContent
		e.Checksum = info.Checksum
		if alg, v, ok := storage.SplitProviderChecksum(info.ProviderChecksum); e.Checksum == "" && ok && alg == storage.AlgMD5 {
			e.Checksum = strings.ToLower(v)
		}
		size := info.Size
		e.Size = &size
		e.MimeType = info.MimeType
		e.Properties = storage.UserProperties(info.Properties)
	case r.Removed():
		e.Action = task.ActionDeleteContent
	default:
		p.cfg.Logger.InfoContext(ctx, "audit: S3 event type not audited", "event", r.EventName, "bucket", r.Bucket, "key", r.Key)
		return e, false, nil
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
