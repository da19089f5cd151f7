package biterror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
)

// resolution says what was done about a bit error; external when a person
// must act. A repair's re-check is queued after the row is recorded
// (recheck), so the re-check's own row always replaces it.
type resolution struct {
	what     string
	external bool
	recheck  *time.Duration // the re-check's delay; nil: none
}

// repaired is the resolution of a repair or re-sync, re-checked after delay.
func repaired(what string, delay time.Duration) resolution {
	return resolution{what: what + "; re-check queued", recheck: &delay}
}

func external(format string, args ...any) resolution {
	return resolution{what: "external: " + fmt.Sprintf(format, args...), external: true}
}

// resolve repairs what it can and says what it did. be is the processor's
// own BIT_ERROR of the item (bit.NewBitError over now), never the message.
func (p *Processor) resolve(ctx context.Context, be task.BitError, now *bit.Observation) (resolution, error) {
	if !be.InternallyResolvable {
		if be.Case == 3 {
			return external("needs the storage provider (its checksum of the item is wrong)"), nil
		}
		return external("needs an operator: no other store holds a copy with the consensus checksum"), nil
	}
	switch be.Case {
	case 2, 4, 8:
		return p.repair(ctx, be, now)
	case 6:
		return p.resyncAudit(ctx, be)
	}
	return external("case %d has no internal repair", be.Case), nil
}

// repair replaces the store's copy with one matching the consensus of now,
// under the repair rule (see the package doc), and queues a re-check.
func (p *Processor) repair(ctx context.Context, be task.BitError, now *bit.Observation) (resolution, error) {
	want := now.Sums.Consensus()
	if !now.CopyDiffers(want) {
		return resolution{}, processors.Permanent(fmt.Errorf("%w: store %s's copy of %s/%s does not differ from the consensus %q as it is now (case %d; C=%q S=%q I=%q A=%q)",
			ErrRepairNotProven, be.StoreID, be.SpaceID, storage.ShortID(be.ContentID), want, now.Case(),
			now.Sums.Content, now.Sums.Storage, now.Sums.Index, now.Sums.Audit))
	}
	src, err := bit.FindCopy(ctx, p.cfg.Stores, be.Account, be.StoreID, be.SpaceID, be.ContentID, want)
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: %w", err)
	}
	if src == "" {
		return external("no other store holds a copy with checksum %s", want), nil
	}
	srcProv, err := p.cfg.Stores.Open(ctx, be.Account, src)
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: open store %s/%s: %w", be.Account, src, err)
	}
	badProv, err := p.cfg.Stores.Open(ctx, be.Account, be.StoreID)
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: open store %s/%s: %w", be.Account, be.StoreID, err)
	}
	dst, err := audited.New(badProv, p.cfg.AuditQueue, audited.Config{Account: be.Account, StoreID: be.StoreID,
		SourceStoreID: src, UserID: p.cfg.UserID, Format: p.cfg.Format, Clock: p.cfg.Clock})
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: %w", err)
	}
	class := "" // the replaced copy's storage class is kept (an archived store stays archived)
	if now.Info != nil {
		class = now.Info.StorageClass
	}
	if why, err := replace(ctx, srcProv, src, dst, be.SpaceID, be.ContentID, want, class); why != "" || err != nil {
		return external("%s", why), err
	}
	return repaired(fmt.Sprintf("case %d: repaired from store %s", be.Case, src), 0), nil
}

// replace writes src's copy of the item to dst with want as the expected
// MD5, in storage class class ("" the default): the provider commits
// nothing unless the bytes hash to want. It returns why when the copy
// cannot be made safely (a person must act).
func replace(ctx context.Context, src storage.Provider, srcID string, dst storage.Provider, space, id, want, class string) (why string, err error) {
	rc, info, err := src.Get(ctx, space, id)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Sprintf("the copy in store %s is gone", srcID), nil
	}
	if err != nil {
		return "", fmt.Errorf("biterror: read %s/%s from store %s: %w", space, storage.ShortID(id), srcID, err)
	}
	defer rc.Close()
	if !strings.EqualFold(info.Checksum, want) {
		return fmt.Sprintf("the copy in store %s changed to checksum %s", srcID, info.Checksum), nil
	}
	out, err := dst.Put(ctx, space, id, rc, storage.PutOptions{Size: info.Size, Checksum: want,
		MimeType: info.MimeType, Properties: storage.UserProperties(info.Properties), StorageClass: class})
	switch {
	case errors.Is(err, storage.ErrChecksumMismatch):
		return fmt.Sprintf("the copy in store %s does not match its own checksum", srcID), nil
	case errors.Is(err, storage.ErrNotFound):
		return fmt.Sprintf("copy from store %s failed: %v", srcID, err), nil // this store's space is gone
	case err != nil:
		return "", fmt.Errorf("biterror: repair %s/%s from store %s: %w", space, storage.ShortID(id), srcID, err)
	}
	if !strings.EqualFold(out.Checksum, want) {
		return "", fmt.Errorf("biterror: repair %s/%s from store %s wrote checksum %s, want %s", space, storage.ShortID(id), srcID, out.Checksum, want)
	}
	return "", nil
}

// resyncAudit is case 6: a fresh ADD_CONTENT from the storage properties
// replaces the out-of-sync audit entry as the latest.
func (p *Processor) resyncAudit(ctx context.Context, be task.BitError) (resolution, error) {
	prov, err := p.cfg.Stores.Open(ctx, be.Account, be.StoreID)
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: open store %s/%s: %w", be.Account, be.StoreID, err)
	}
	info, err := prov.Head(ctx, be.SpaceID, be.ContentID)
	if errors.Is(err, storage.ErrNotFound) {
		return external("the item is no longer in storage"), nil
	}
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: head %s/%s: %w", be.SpaceID, be.ContentID, err)
	}
	a := bit.AuditFromStorage(be.Account, be.StoreID, be.SpaceID, be.ContentID, prov.Kind(), info, info.Checksum,
		p.cfg.UserID, p.cfg.Clock.Now())
	if err := send(ctx, p.cfg.AuditQueue, a.Task(), p.cfg.Format, 0); err != nil {
		return resolution{}, err
	}
	return repaired("case 6: audit log re-synced from storage", p.cfg.RecheckDelay), nil
}

// recheck queues a BIT task for the item in the same run.
func (p *Processor) recheck(ctx context.Context, be task.BitError, why string, delay time.Duration) error {
	b := task.Bit{Account: be.Account, StoreID: be.StoreID, SpaceID: be.SpaceID, ContentID: be.ContentID,
		RunID: be.RunID, Extra: map[string]string{bit.KeyRecheckOf: why}}
	return send(ctx, p.cfg.BitQueue, b.Task(), p.cfg.Format, delay)
}

func send(ctx context.Context, q queue.Queue, t *task.Task, f task.Format, delay time.Duration) error {
	body, err := task.Encode(t, f)
	if err != nil {
		return fmt.Errorf("biterror: encode %s: %w", t.Type, err)
	}
	if err := q.Send(ctx, queue.SendEntry{Body: body, Delay: delay, Group: queue.GroupFor(t.Get(task.KeyAccount))}); err != nil {
		return fmt.Errorf("biterror: send %s to %s: %w", t.Type, q.Name(), err)
	}
	return nil
}
