// Package biterror is the BIT_ERROR task processor (docs/ARCHITECTURE.md,
// Bit integrity): it records each bit error Mill observes and repairs what
// the mill can repair itself — and only what the bit check proves must be
// repaired.
//
// # The message is a hint
//
// A BIT_ERROR task names an item and a run; everything else it says (the
// case, the checksums, the description, "internally resolvable") is a
// claim anyone who can send to the bit-error queue can make, and none of
// it is recorded or acted on. The processor
//
//  1. requires the run's bit log row of the item to be an error the bit
//     check recorded (FAILURE or ERROR; the run rule, ErrNotCheckedError):
//     a row is only ever replaced by a fresher observation of the same
//     item in the same run, so a run whose check found the item healthy —
//     and a finished report that counted it so — cannot be changed. While
//     there is no row at all (the bit check sends the task just before it
//     records its row) the task is retried; on its last attempt it is
//     refused;
//  2. looks at the item again (bit.Observer, as the bit check does) and
//     classifies what it sees (bit.Decide). Unless that is a bit error
//     (cases 2, 3, 4, 6 and 8, the cases the bit check sends BIT_ERROR
//     for) the task is refused (the observation rule, ErrNotObserved) and
//     nothing is recorded, changed or queued;
//  3. builds its own BIT_ERROR of the observed case (bit.NewBitError: the
//     observed checksums, the Mill-written description, and whether
//     another store holds a copy with the consensus checksum) and works
//     from that. When the observed case is not the claimed one, the
//     observed case is recorded and acted on; the row's details say which
//     case the message claimed (a number, never the message's text).
//
// Refusals are permanent errors naming the rule: Workman dead-letters them.
//
// # The Java Mill's BIT_ERROR
//
// The Java Mill's bit check writes a BIT_ERROR with no case and no run
// (task.BitError's Case is 0) and leaves it to people: it means "a bit
// check found a problem with this item". Its check's row is in the Java
// Mill's bit log, so the run rule cannot apply; the observation rule and
// the repair rule do, unchanged: Mill looks at the item itself, refuses
// the task when it sees no bit error, and otherwise records and resolves
// what it observed exactly as above, as the item's row outside any run
// (run ID "", the run of the Java producer's BIT tasks), its details
// saying it came from a Java-shaped BIT_ERROR. So such a task can do no
// more than a BIT task of the item: a check, and a repair the check
// proves necessary. A BIT_ERROR with a run but no case is refused as
// malformed.
//
// Record: the observed error is written to the bit log as the item's row
// for the run (same key as the bit check's row, so the run still has one
// row per item): result ERROR for cases 4 and 8, FAILURE otherwise, the
// observed case and four checksums, the store's registered kind, the
// processor's Config.Agent, and details ending in the resolution taken
// ("repaired from store 2", "external: …"). It is also logged (WARN) for operators, with the claims
// of the message beside what was observed. When a repair re-checks the
// item, the re-check is queued after the row is recorded and replaces it
// with its own outcome; its details say it followed the repair
// (bit.KeyRecheckOf), so the history stays readable.
//
// # The repair rule
//
// Mill overwrites a copy only by a repair the bit check proved necessary:
// that copy differs from the consensus and the replacement matches it.
// With the observation of step 2 the processor
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
// Resolution, by observed case, when the processor's own BIT_ERROR is
// internally resolvable:
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
// Case 3, an error for which no other store holds a healthy copy, and a
// repair whose source turns out unusable are external: the row is
// recorded, nothing is changed, and the task is then dead-lettered (a
// permanent error wrapping ErrNeedsPerson) so that it waits for a person
// on the dead-letter queue with its reason, as the Java Mill left the
// bit-error queue to people — the dead-letter alarms fire, `millctl dlq
// list` shows it, and a redrive after the fix checks it again.
//
// Errors: a malformed task is permanent; store, queue and bit log errors are
// returned as they are (Workman retries). Repairs are idempotent: a
// redelivered task finds the re-check's SUCCESS row or a healthy item, and
// is refused.
package biterror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
)

// DefaultUserID is the user-id of the writes and AUDIT tasks of repairs.
const DefaultUserID = "mill-biterror"

// Errors the processor returns wrapped in processors.Permanent (test with
// errors.Is); ErrNotCheckedError is retried until the last attempt.
var (
	// ErrNotCheckedError: the run rule refused the task — the run's bit
	// log row of the item is not an error the bit check recorded.
	ErrNotCheckedError = errors.New("biterror: refused by the run rule: a bit error replaces only a row in which " +
		"the run's bit check recorded an error for the item")
	// ErrNotObserved: the observation rule refused the task — the item,
	// looked at now, has no bit error.
	ErrNotObserved = errors.New("biterror: refused by the observation rule: a bit error is recorded only when " +
		"Mill observes it itself, and the item looked at now has none")
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
	Stores stores.RegistryOpener `validate:"required"`
	// Observer looks at the item again (required; the bit check's
	// Observer over the same stores, index and audit log).
	Observer   *bit.Observer `validate:"required"`
	BitLog     bitlog.Log    `validate:"required"`
	AuditQueue queue.Queue   `validate:"required"` // audited repairs and case 6 re-syncs
	BitQueue   queue.Queue   `validate:"required"` // re-checks of repaired items
	// Common: RecheckDelay delays the re-check after a case 6 audit
	// re-sync; UserID (default DefaultUserID) is that of repair writes.
	bit.Common
}

// WithDefaults returns c with every zero default filled in.
func (c Config) WithDefaults() Config {
	c.Common = c.Common.WithDefaults(DefaultUserID)
	return c
}

// Processor is the BIT_ERROR task processor. Safe for concurrent use.
type Processor struct{ cfg Config }

// New returns a BIT_ERROR processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Common.Validate("biterror: Config", cfg); err != nil {
		return nil, err
	}
	return &Processor{cfg: cfg}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "biterror" }

// Handle checks the message against the bit log and a fresh look at the
// item, records the observed error and resolves it where the mill can (see
// the package doc).
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	claim, err := task.BitErrorFrom(t)
	if err != nil {
		return processors.Permanent(err)
	}
	if _, err := p.cfg.Stores.Registry().Store(claim.Account, claim.StoreID); err != nil {
		return processors.Permanent(fmt.Errorf("biterror: %w", err))
	}
	java := claim.Case == 0 // the Java Mill's shape: no case, no run (task.BitError)
	var checked error
	if !java { // a Java check's row is in the Java Mill's bit log: no run rule to apply
		if checked, err = p.checkedError(ctx, claim); err != nil {
			return err
		}
	}
	now, err := p.cfg.Observer.ObserveRun(ctx, claim.Account, claim.StoreID, claim.SpaceID, claim.ContentID, claim.RunID)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidID) && !processors.IsPermanent(err) {
			return processors.Permanent(err) // a store refuses the ID: a retry cannot help
		}
		return fmt.Errorf("biterror: look at the item again: %w", err)
	}
	observed := now.Case()
	if !IsBitError(observed) {
		return processors.Permanent(fmt.Errorf("%w: %s/%s/%s/%s is %s (C=%q S=%q I=%q A=%q); the message claimed case %d",
			ErrNotObserved, claim.Account, claim.StoreID, claim.SpaceID, storage.ShortID(claim.ContentID), bit.CaseText(observed),
			now.Sums.Content, now.Sums.Storage, now.Sums.Index, now.Sums.Audit, claim.Case))
	}
	if checked != nil {
		return checked // no row yet: the observed error waits for the bit check's row
	}
	b := task.Bit{Account: claim.Account, StoreID: claim.StoreID, SpaceID: claim.SpaceID, ContentID: claim.ContentID, RunID: claim.RunID}
	be, err := bit.NewBitError(ctx, p.cfg.Stores, b, now, observed)
	if err != nil {
		return fmt.Errorf("biterror: %w", err)
	}
	resolution, err := p.resolve(ctx, be, now)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidID) && !processors.IsPermanent(err) {
			return processors.Permanent(err)
		}
		return err
	}
	result := bitlog.ResultFailure
	if be.Case == 4 || be.Case == 8 {
		result = bitlog.ResultError
	}
	details := be.Description
	switch {
	case java:
		details += "; from a Java-shaped BIT_ERROR (no case, no run)"
	case claim.Case != be.Case:
		details += fmt.Sprintf("; the BIT_ERROR message claimed case %d", claim.Case)
	}
	row := bitlog.Row{
		RunID: be.RunID, Account: be.Account, StoreID: be.StoreID, StoreKind: be.StoreType,
		SpaceID: be.SpaceID, ContentID: be.ContentID, Result: result, Case: be.Case,
		ContentChecksum: be.ContentChecksum, StorageChecksum: be.StorageChecksum,
		IndexChecksum: be.IndexChecksum, AuditChecksum: be.AuditChecksum,
		Details: details + "; resolution: " + resolution.what, CheckedAt: p.cfg.Clock.Now(),
		Agent: p.cfg.Agent,
	}
	if err := p.cfg.BitLog.Record(ctx, row); err != nil {
		return fmt.Errorf("biterror: %w", err)
	}
	p.cfg.Logger.With(t.LogAttrs()...).Warn("bit error", "case", be.Case, "internally_resolvable", be.InternallyResolvable,
		"resolution", resolution.what, "needs_person", resolution.external,
		"C", be.ContentChecksum, "S", be.StorageChecksum, "I", be.IndexChecksum, "A", be.AuditChecksum,
		slog.Group("claimed", "case", claim.Case, "internally_resolvable", claim.InternallyResolvable,
			"C", storage.ShortID(claim.ContentChecksum), "S", storage.ShortID(claim.StorageChecksum),
			"I", storage.ShortID(claim.IndexChecksum), "A", storage.ShortID(claim.AuditChecksum)))
	if resolution.recheck != nil {
		why := strings.TrimSuffix(resolution.what, "; re-check queued")
		if err := p.recheck(ctx, be, why, *resolution.recheck); err != nil {
			return err
		}
	}
	if resolution.external {
		return processors.Permanent(fmt.Errorf("%w: case %d of %s/%s/%s/%s: %s", ErrNeedsPerson, be.Case,
			be.Account, be.StoreID, be.SpaceID, storage.ShortID(be.ContentID), resolution.what))
	}
	return nil
}

// IsBitError reports whether a case of the decision table is a bit error:
// one the bit check sends a BIT_ERROR task for (2, 3, 4, 6 and 8).
func IsBitError(caseNumber int) bool {
	switch caseNumber {
	case 2, 3, 4, 6, 8:
		return true
	}
	return false
}

// checkedError applies the run rule (see the package doc): the run's row
// of the item must be an error the bit check recorded. A SUCCESS row is a
// permanent refusal (err). With no row, checked is the refusal to return
// once the item is seen to have a bit error at all: retried (the bit check
// records its row right after it sends the task), permanent on the task's
// last attempt.
func (p *Processor) checkedError(ctx context.Context, claim task.BitError) (checked, err error) {
	rows, _, err := p.cfg.BitLog.Results(ctx, bitlog.Filter{RunID: claim.RunID, Account: claim.Account,
		StoreID: claim.StoreID, SpaceID: claim.SpaceID, ContentID: claim.ContentID, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("biterror: read the run's row: %w", err)
	}
	// A filter's empty run matches every run; rows come in run order, so a
	// row of the run "" (a check outside any run) comes first.
	if len(rows) > 0 && rows[0].RunID != claim.RunID {
		rows = nil
	}
	item := fmt.Sprintf("%s/%s/%s/%s", claim.Account, claim.StoreID, claim.SpaceID, storage.ShortID(claim.ContentID))
	if len(rows) == 0 {
		checked = fmt.Errorf("%w: run %s has no row for %s", ErrNotCheckedError, storage.QuoteID(claim.RunID), item)
		at, ok := processors.AttemptsFrom(ctx)
		if !ok {
			at.Done = claim.Attempts
		}
		if at.Done >= at.Limit-1 {
			return processors.Permanent(checked), nil
		}
		return checked, nil
	}
	if r := rows[0]; r.Result == bitlog.ResultSuccess {
		return nil, processors.Permanent(fmt.Errorf("%w: run %s recorded %s (case %d) for %s", ErrNotCheckedError,
			storage.QuoteID(claim.RunID), r.Result, r.Case, item))
	}
	return nil, nil
}
