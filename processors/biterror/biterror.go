// Package biterror is the BIT_ERROR task processor (docs/ARCHITECTURE.md,
// Bit integrity): it records each bit error and repairs what the mill can
// repair itself — and only what the bit check proves must be repaired.
//
// Record: the error is written to the bit log as the item's row for the
// run (same key as the bit check's row, so the run still has one row per
// item): result ERROR for cases 4 and 8, FAILURE otherwise, the case, the
// four checksums of the BIT_ERROR task and details ending in the
// resolution taken ("repaired from store 2", "external: …"). It is also
// logged (WARN) for operators. When a repair re-checks the item, the
// re-check is queued after the row is recorded and replaces it with its own
// outcome; its details say it followed the repair (bit.KeyRecheckOf), so
// the history stays readable.
//
// # The repair rule
//
// Mill overwrites a copy only by a repair the bit check proved necessary:
// that copy differs from the consensus and the replacement matches it. The
// task's checksums are not trusted for this (a message can be forged or
// stale): before it writes anything the processor looks at the item again
// (bit.Observer, as the bit check does) and
//
//  1. takes the consensus of what it sees now (bit.Checksums.Consensus);
//  2. requires this store's copy to differ from it
//     (bit.Observation.CopyDiffers: missing, its bytes hash to something
//     else, or — bytes not read — the provider reports another checksum);
//  3. reads the replacement from another store whose copy reports that MD5
//     (bit.FindCopy) and writes it through the audited provider of the bad
//     store with the consensus as the expected MD5, so the provider
//     commits nothing unless the bytes written hash to the consensus.
//
// When step 2 fails the task is refused with a permanent error naming the
// rule (ErrRepairNotProven; Workman dead-letters it) and nothing is
// written or recorded. The write is an ordinary audited Put: it emits its
// AUDIT task, and what it replaces stays recoverable as the storage layer
// keeps replaced bytes.
//
// Resolution, by case, when the task is internally resolvable:
//
//   - cases 2, 4 and 8 (the bytes of this store are wrong or missing): the
//     repair above, then a fresh BIT task for the item (same run id) on
//     the bit queue;
//   - case 6 (audit log out of sync): an ADD_CONTENT AUDIT task built from
//     the item's storage properties is put on the audit queue, and a BIT
//     task re-checks the item after Config.RecheckDelay, once the audit
//     processor has written the new entry.
//
// # Bit errors that need a person
//
// Every other case, a task that is not internally resolvable, and a
// repair for which no healthy copy is found (any more) are external: the
// row is recorded, nothing is changed, and the task is then dead-lettered
// (a permanent error wrapping ErrNeedsPerson) so that it waits for a
// person on the dead-letter queue with its reason, as the Java Mill left
// the bit-error queue to people — the dead-letter alarms fire, `millctl
// dlq list` shows it, and a redrive after the fix checks it again.
//
// Errors: a malformed task is permanent; store, queue and bit log errors are
// returned as they are (Workman retries). Repairs are idempotent: a
// redelivered task looks again and, when the copy is already repaired, is
// refused as not proven.
package biterror

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/validate"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
)

// DefaultUserID is the user-id of the writes and AUDIT tasks of repairs.
const DefaultUserID = "mill-biterror"

// Errors the processor returns wrapped in processors.Permanent (test with
// errors.Is).
var (
	// ErrRepairNotProven: the repair rule refused the task — the store's
	// copy does not differ from the consensus as the item is now.
	ErrRepairNotProven = errors.New("biterror: refused by the repair rule: a store's copy is overwritten only " +
		"by a repair the bit check proved necessary (the copy differs from the consensus and the replacement matches it)")
	// ErrNeedsPerson: the bit error is recorded and the mill cannot resolve
	// it; the task is dead-lettered for an operator.
	ErrNeedsPerson = errors.New("biterror: needs a person")
)

// Config configures the processor.
type Config struct {
	Stores bit.Stores // required
	// Observer looks at the item again before a repair (required; the
	// bit check's Observer over the same stores, index and audit log).
	Observer   *bit.Observer
	BitLog     bitlog.Log  // required
	AuditQueue queue.Queue // required: audited repairs and case 6 re-syncs
	BitQueue   queue.Queue // required: re-checks of repaired items
	// RecheckDelay delays the re-check after a case 6 audit re-sync
	// (default bit.DefaultRecheckDelay; at most queue.MaxDelay).
	RecheckDelay time.Duration
	// UserID of repair writes (default DefaultUserID).
	UserID string
	// Format of emitted task bodies (default task.FormatJSON).
	Format task.Format
	Clock  clock.Clock  // default the system clock
	Logger *slog.Logger // default slog.Default()
}

// WithDefaults returns c with every zero default filled in.
func (c Config) WithDefaults() Config {
	if c.RecheckDelay == 0 {
		c.RecheckDelay = bit.DefaultRecheckDelay
	}
	if c.UserID == "" {
		c.UserID = DefaultUserID
	}
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	p := validate.New("biterror: Config")
	p.Require("Stores", c.Stores != nil)
	p.Require("Observer", c.Observer != nil)
	p.Require("BitLog", c.BitLog != nil)
	p.Require("AuditQueue", c.AuditQueue != nil)
	p.Require("BitQueue", c.BitQueue != nil)
	p.Check(c.RecheckDelay >= 0 && c.RecheckDelay <= queue.MaxDelay, "RecheckDelay", c.RecheckDelay, "be within 0..%s", queue.MaxDelay)
	p.Check(c.Format == task.FormatJSON || c.Format == task.FormatProperties, "Format", c.Format, "be JSON or properties")
	return p.Err()
}

// Processor is the BIT_ERROR task processor. Safe for concurrent use.
type Processor struct{ cfg Config }

// New returns a BIT_ERROR processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Processor{cfg: cfg}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "biterror" }

// Handle records the error and resolves it where the mill can (see the
// package doc).
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	be, err := task.BitErrorFrom(t)
	if err != nil {
		return processors.Permanent(err)
	}
	if _, err := p.cfg.Stores.Registry().Store(be.Account, be.StoreID); err != nil {
		return processors.Permanent(fmt.Errorf("biterror: %w", err))
	}
	resolution, err := p.resolve(ctx, be)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidID) && !processors.IsPermanent(err) {
			return processors.Permanent(err) // a store refuses the ID: a retry cannot help
		}
		return err
	}
	result := bitlog.ResultFailure
	if be.Case == 4 || be.Case == 8 {
		result = bitlog.ResultError
	}
	details := be.Description
	if details == "" {
		details = fmt.Sprintf("case %d", be.Case)
	}
	row := bitlog.Row{
		RunID: be.RunID, Account: be.Account, StoreID: be.StoreID, StoreKind: be.StoreType,
		SpaceID: be.SpaceID, ContentID: be.ContentID, Result: result, Case: be.Case,
		ContentChecksum: be.ContentChecksum, StorageChecksum: be.StorageChecksum,
		IndexChecksum: be.IndexChecksum, AuditChecksum: be.AuditChecksum,
		Details: details + "; resolution: " + resolution.what, CheckedAt: p.cfg.Clock.Now(),
	}
	if err := p.cfg.BitLog.Record(ctx, row); err != nil {
		return fmt.Errorf("biterror: %w", err)
	}
	p.cfg.Logger.With(t.LogAttrs()...).Warn("bit error", "case", be.Case, "internally_resolvable", be.InternallyResolvable,
		"resolution", resolution.what, "needs_person", resolution.external,
		"C", be.ContentChecksum, "S", be.StorageChecksum, "I", be.IndexChecksum, "A", be.AuditChecksum)
	if resolution.recheck != nil {
		why := strings.TrimSuffix(resolution.what, "; re-check queued")
		if err := p.recheck(ctx, be, why, *resolution.recheck); err != nil {
			return err
		}
	}
	if resolution.external {
		return processors.Permanent(fmt.Errorf("%w: case %d of %s/%s/%s/%s: %s", ErrNeedsPerson, be.Case,
			be.Account, be.StoreID, be.SpaceID, be.ContentID, resolution.what))
	}
	return nil
}

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

// resolve repairs what it can and says what it did.
func (p *Processor) resolve(ctx context.Context, be task.BitError) (resolution, error) {
	if !be.InternallyResolvable {
		return external("needs an operator (or the storage provider)"), nil
	}
	switch be.Case {
	case 2, 4, 8:
		return p.repair(ctx, be)
	case 6:
		return p.resyncAudit(ctx, be)
	}
	return external("case %d has no internal repair", be.Case), nil
}

// repair replaces the store's copy with one matching the consensus, under
// the repair rule (see the package doc), and queues a re-check.
func (p *Processor) repair(ctx context.Context, be task.BitError) (resolution, error) {
	now, err := p.cfg.Observer.Observe(ctx, be.Account, be.StoreID, be.SpaceID, be.ContentID)
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: look again before the repair: %w", err)
	}
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
		UserID: p.cfg.UserID, Format: p.cfg.Format, Clock: p.cfg.Clock})
	if err != nil {
		return resolution{}, fmt.Errorf("biterror: %w", err)
	}
	if why, err := replace(ctx, srcProv, src, dst, be.SpaceID, be.ContentID, want); why != "" || err != nil {
		return external("%s", why), err
	}
	return repaired(fmt.Sprintf("case %d: repaired from store %s", be.Case, src), 0), nil
}

// replace writes src's copy of the item to dst with want as the expected
// MD5: the provider commits nothing unless the bytes hash to want. It
// returns why when the copy cannot be made safely (a person must act).
func replace(ctx context.Context, src storage.Provider, srcID string, dst storage.Provider, space, id, want string) (why string, err error) {
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
		MimeType: info.MimeType, Properties: storage.UserProperties(info.Properties)})
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
	if err := q.Send(ctx, queue.SendEntry{Body: body, Delay: delay}); err != nil {
		return fmt.Errorf("biterror: send %s to %s: %w", t.Type, q.Name(), err)
	}
	return nil
}
