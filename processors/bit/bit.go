package bit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// Defaults of Config.
const (
	// DefaultRecheckDelay is the bit-integrity table's "wait 5 minutes
	// before trying again".
	DefaultRecheckDelay = 5 * time.Minute
	// DefaultUserID is the user-id of the AUDIT tasks the check emits.
	DefaultUserID = "mill-bit"
)

// KeyRecheckOf is a BIT task property naming why the task re-checks an
// item (set by the bit-error processor after a repair, e.g. "case 2:
// repaired from store 2"); the check adds it to the bit log row's details
// (in that form only: RecheckNote), so the row that replaces the error's
// row still tells its history.
const KeyRecheckOf = "recheckOf"

// Config configures the processor.
type Config struct {
	Stores        stores.RegistryOpener `validate:"required"`
	Index         contentindex.Index    `validate:"required"`
	AuditLog      auditlog.Log          `validate:"required"`
	BitLog        bitlog.Log            `validate:"required"`
	AuditQueue    queue.Queue           `validate:"required"` // AUDIT tasks (cases 7, 9, 10)
	BitErrorQueue queue.Queue           `validate:"required"` // BIT_ERROR tasks (cases 2, 3, 4, 6, 8)
	// ReadSettings are how the check reads content (see Observer): no
	// store is unreadable, the default transfer, no checkpoints when zero.
	ReadSettings
	// Common: RecheckDelay is the wait of cases 4, 8, 9 and 10 before the
	// next attempt; UserID (default DefaultUserID) that of the AUDIT tasks
	// the check emits.
	Common
}

// WithDefaults returns c with every zero default filled in.
func (c Config) WithDefaults() Config {
	c.Common = c.Common.WithDefaults(DefaultUserID)
	return c
}

// Common is the part of a Config both bit processors share (the check's
// and the bit-error processor's, package biterror): the settings of what
// they write, their clock and their logger.
type Common struct {
	// RecheckDelay is the wait before the processor's re-check of an item
	// (default DefaultRecheckDelay; at most queue.MaxDelay).
	RecheckDelay time.Duration
	// UserID is the user-id of the AUDIT tasks (and writes) the processor
	// emits (default the processor's DefaultUserID).
	UserID string
	// Agent is recorded in every bit-log row the processor writes: this
	// Workman's instance and Mill's version (zero: none recorded).
	Agent bitlog.Agent
	// Format of emitted task bodies (default task.FormatJSON).
	Format task.Format
	Clock  clock.Clock  // default the system clock
	Logger *slog.Logger // default slog.Default()
}

// WithDefaults returns c with zero fields set to their defaults; userID
// is the processor's default UserID.
func (c Common) WithDefaults(userID string) Common {
	defaults.Fill(&c, Common{RecheckDelay: DefaultRecheckDelay, UserID: userID})
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

// Validate returns every problem of cfg, the Config named name that embeds
// c: its required fields (package validate) and c's own.
func (c Common) Validate(name string, cfg any) error {
	p := validate.Struct(name, cfg)
	p.Add("RecheckDelay", queue.CheckDelay(c.RecheckDelay))
	p.Add("Format", c.Format.Validate())
	p.Add("Agent", c.Agent.Validate())
	return p.Err()
}

// Processor is the BIT task processor. Safe for concurrent use.
type Processor struct {
	cfg Config
	obs *Observer
}

// New returns a BIT processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Common.Validate("bit: Config", cfg); err != nil {
		return nil, err
	}
	obs := &Observer{Stores: cfg.Stores, Index: cfg.Index, AuditLog: cfg.AuditLog, ReadSettings: cfg.ReadSettings}
	if jobs, ok := cfg.BitLog.(bitlog.AtRestJobs); ok {
		obs.AtRest = jobs // the producer's record: C of a task naming a job
	}
	return &Processor{cfg: cfg, obs: obs}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "bit" }

// check is one check: what it observed and what it decided.
type check struct {
	*Observation
	consensus  string
	caseNumber int
}

// Handle checks one item (see the package doc for the outcomes).
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	b, err := task.BitFrom(t)
	if err != nil {
		return processors.Permanent(err)
	}
	opts := observeOpts{resumeKey: storage.CheckpointKey("bit", b.Account, b.StoreID, b.SpaceID, b.ContentID, b.RunID),
		headFirst: b.Extra[KeyRecheckOf] != ""}
	if b.AtRestJob != "" {
		// C is the job's computed checksum, as the producer recorded it;
		// a reference the record does not hold is refused.
		res, err := p.atRestOf(ctx, b)
		if err != nil {
			return err
		}
		if !res.ok {
			return p.recordAtRestFailure(ctx, b, res)
		}
		opts = observeOpts{atRest: res}
	}
	ob, err := p.obs.observeItem(ctx, b.Account, b.StoreID, b.SpaceID, b.ContentID, opts)
	if err != nil {
		return err
	}
	o := &check{Observation: ob}
	o.caseNumber = Decide(o.Sums)
	o.consensus = o.Sums.Consensus()
	log := p.cfg.Logger.With(t.LogAttrs()...).With("case", o.caseNumber)

	if Waits(o.caseNumber) {
		// Workman puts the attempt and its limit on ctx; called outside it,
		// the task's own count and the default limit.
		at, ok := processors.AttemptsFrom(ctx)
		if !ok {
			at.Done = b.Attempts
		}
		switch at.Done {
		case at.Limit - 1: // the last attempt: the final outcome below
		case at.Limit - 2: // the penultimate: wait once
			return processors.RetryAfter(p.cfg.RecheckDelay, fmt.Errorf("bit: case %d (%s) at attempt %d of %d: re-check after %s",
				o.caseNumber, CaseText(o.caseNumber), at.Done+1, at.Limit, p.cfg.RecheckDelay))
		default:
			if at.Done < at.Limit-2 { // earlier: an ordinary retry
				return fmt.Errorf("bit: case %d (%s) at attempt %d of %d: re-check",
					o.caseNumber, CaseText(o.caseNumber), at.Done+1, at.Limit)
			}
		}
	}
	var result bitlog.Result
	switch o.caseNumber {
	case 11:
		if b.RunID == "" {
			return nil // the table's "do nothing": no run's report counts this item
		}
		result = bitlog.ResultSuccess
	case 1:
		result = bitlog.ResultSuccess
	case 2, 3, 6:
		result = bitlog.ResultFailure
		if err := p.sendBitError(ctx, b, o); err != nil {
			return err
		}
	case 4, 8:
		result = bitlog.ResultError
		if err := p.sendBitError(ctx, b, o); err != nil {
			return err
		}
	case 5:
		result = bitlog.ResultFailure
		if err := p.repairIndex(ctx, b, o); err != nil {
			return err
		}
	case 7:
		result = bitlog.ResultFailure
		if err := p.sendAudit(ctx, b, o); err != nil {
			return err
		}
	case 9, 10:
		result = bitlog.ResultError
		if err := p.sendAudit(ctx, b, o); err != nil {
			return err
		}
	}
	row := bitlog.Row{
		RunID: b.RunID, Account: b.Account, StoreID: b.StoreID, StoreKind: string(o.StoreKind),
		SpaceID: b.SpaceID, ContentID: b.ContentID, Result: result, Case: o.caseNumber,
		ContentChecksum: o.cChecksum(), StorageChecksum: o.sChecksum(),
		IndexChecksum: o.Sums.Index, AuditChecksum: o.Sums.Audit,
		Details: strings.Join(append([]string{CaseText(o.caseNumber)}, o.Details...), "; "),
		Method:  o.Method(), Bytes: o.Bytes, Archived: o.Archived(),
		CheckedAt: p.cfg.Clock.Now(), Agent: p.cfg.Agent,
	}
	row.Details += RecheckNote(b.Extra[KeyRecheckOf])
	row.Supersedes = RecheckCase(b.Extra[KeyRecheckOf])
	if o.AtRestJob != "" {
		row.Method, row.Bytes, row.Archived = bitlog.MethodAtRest, o.Info.Size, o.Info.Archived
	}
	if err := p.cfg.BitLog.Record(ctx, row); err != nil {
		return fmt.Errorf("bit: %w", err)
	}
	if result != bitlog.ResultSuccess {
		log.Warn("bit check", "result", string(result), "details", row.Details,
			"C", row.ContentChecksum, "S", row.StorageChecksum, "I", row.IndexChecksum, "A", row.AuditChecksum)
	}
	return nil
}

func (o *Observation) cChecksum() string {
	if o.Sums.Found && o.Sums.ContentRead {
		return o.Sums.Content
	}
	return ""
}

func (o *Observation) sChecksum() string {
	if o.Sums.Found {
		return o.Sums.Storage
	}
	return ""
}

// CaseText is the decision table's "how did it happen" of a case, in short
// ("case 2: content went sour").
func CaseText(n int) string {
	switch n {
	case 1:
		return "case 1: checksums agree"
	case 2:
		return "case 2: content went sour"
	case 3:
		return "case 3: storage provider checksum wrong"
	case 4:
		return "case 4: storage provider checksum disagrees, content not read"
	case 5:
		return "case 5: content index checksum wrong or missing"
	case 6:
		return "case 6: audit log out of sync"
	case 7:
		return "case 7: audit log entry missing"
	case 8:
		return "case 8: item missing from storage, not captured"
	case 9:
		return "case 9: item added in storage, not captured"
	case 10:
		return "case 10: item updated in storage, not captured"
	case 11:
		return "case 11: item deleted everywhere; nothing to check"
	}
	return fmt.Sprintf("case %d", n)
}

// sendBitError puts a BIT_ERROR task on the bit-error queue.
func (p *Processor) sendBitError(ctx context.Context, b task.Bit, o *check) error {
	be, err := NewBitError(ctx, p.cfg.Stores, b, o.Observation, o.caseNumber)
	if err != nil {
		return err
	}
	return send(ctx, p.cfg.BitErrorQueue, be.Task(), p.cfg.Format)
}

// NewBitError returns the BIT_ERROR task for the item b named, observed as
// o, in case caseNumber. Case 6 is internally resolvable (the audit log is
// re-synced from storage), case 3 never is (only the storage provider can
// fix its checksum); any other case is when another store of the account
// holds a copy with the consensus checksum (FindCopy), which is then noted
// in o.Details. Its description is the case and o.Details.
func NewBitError(ctx context.Context, s stores.RegistryOpener, b task.Bit, o *Observation, caseNumber int) (task.BitError, error) {
	resolvable := false
	switch caseNumber {
	case 6:
		resolvable = true
	case 3:
	default:
		if want := o.Sums.Consensus(); want != "" {
			src, err := FindCopy(ctx, s, b.Account, b.StoreID, b.SpaceID, b.ContentID, want)
			if err != nil {
				return task.BitError{}, err
			}
			if src != "" {
				resolvable = true
				o.Details = append(o.Details, "store "+src+" holds a copy with the consensus checksum")
			}
		}
	}
	return task.BitError{
		Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID, ContentID: b.ContentID, RunID: b.RunID,
		Description: strings.Join(append([]string{CaseText(caseNumber)}, o.Details...), "; "),
		StoreType:   string(o.StoreKind), Case: caseNumber, InternallyResolvable: resolvable,
		ContentChecksum: o.cChecksum(), StorageChecksum: o.sChecksum(),
		IndexChecksum: o.Sums.Index, AuditChecksum: o.Sums.Audit,
	}, nil
}

// FindCopy returns the ID of the first store of account (in registry order)
// other than storeID that holds space/contentID with the MD5 want, judged by
// what the store reports (Head) under the one rule (storage.ChecksumOf: the
// provider's own digest beats the recorded MD5, and a copy whose recorded
// MD5 is contradicted holds nothing); "" when none does. Stores that do not
// have the item are skipped; other errors are returned.
func FindCopy(ctx context.Context, s stores.RegistryOpener, account, storeID, space, contentID, want string) (string, error) {
	acct := s.Registry().Account(account)
	if acct == nil {
		return "", nil
	}
	for _, st := range acct.Stores {
		if st.ID == storeID {
			continue
		}
		prov, err := s.Open(ctx, account, st.ID)
		if err != nil {
			return "", fmt.Errorf("bit: open store %s/%s: %w", account, st.ID, err)
		}
		info, err := prov.Head(ctx, space, contentID)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("bit: head %s/%s in store %s: %w", space, storage.ShortID(contentID), st.ID, err)
		}
		if storage.ChecksumOf(info, nil).Holds(want) {
			return st.ID, nil
		}
	}
	return "", nil
}

// AuditFromStorage is the ADD_CONTENT AUDIT task that re-syncs the audit log
// and the content index with an item as storage holds it.
func AuditFromStorage(account, storeID, space, contentID string, kind storage.Kind, info *storage.Info, checksum, userID string, at time.Time) task.Audit {
	size := info.Size
	return task.Audit{
		Account: account, StoreID: storeID, SpaceID: space, ContentID: contentID,
		Action: task.ActionAddContent, UserID: userID, DateTime: at,
		ContentChecksum: checksum, ContentMimetype: info.MimeType, ContentSize: &size,
		ContentProperties: storage.UserProperties(info.Properties), StoreType: string(kind),
	}
}

// sendAudit puts an ADD_CONTENT AUDIT task built from the storage
// properties on the audit queue.
func (p *Processor) sendAudit(ctx context.Context, b task.Bit, o *check) error {
	a := AuditFromStorage(b.Account, b.StoreID, b.SpaceID, b.ContentID, o.StoreKind, o.Info,
		storageMD5(o), p.cfg.UserID, p.cfg.Clock.Now())
	o.Details = append(o.Details, "ADD_CONTENT queued for the audit processor")
	return send(ctx, p.cfg.AuditQueue, a.Task(), p.cfg.Format)
}

// storageMD5 is the MD5 the store's copy has (storage.ChecksumOf: the
// bytes read, else the provider's digest, else the recorded MD5).
func storageMD5(o *check) string { return o.Copy.MD5 }

// repairIndex is case 5: set the index checksum to S in place and, when the
// audit entry's properties are null, patch the audit entry and the index
// row with the storage properties.
func (p *Processor) repairIndex(ctx context.Context, b task.Bit, o *check) error {
	item := contentindex.Item{Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID, ContentID: b.ContentID}
	sum := storageMD5(o)
	patchProps := o.Audit != nil && o.Audit.Properties == nil
	size := o.Info.Size
	fromStorage := contentindex.Entry{Item: item, Checksum: sum, Size: &size, MimeType: o.Info.MimeType,
		Properties: storage.UserProperties(o.Info.Properties)}
	switch {
	case o.Index == nil || o.Index.Deleted:
		// No live row: write it as the audit entry's event recorded it.
		fromStorage.Modified = o.Info.Modified
		if o.Audit != nil {
			fromStorage.Modified = o.Audit.Time
		}
		applied, err := p.cfg.Index.Upsert(ctx, fromStorage)
		if err != nil {
			return fmt.Errorf("bit: content index upsert %s: %w", item, err)
		}
		o.Details = append(o.Details, fmt.Sprintf("content index row written from storage (applied=%t)", applied))
	default:
		if err := p.cfg.Index.SetChecksum(ctx, item, sum); err != nil {
			return fmt.Errorf("bit: content index set checksum %s: %w", item, err)
		}
		o.Details = append(o.Details, "content index checksum updated in place")
		if patchProps {
			fromStorage.Modified = o.Index.Modified // in place: the row's time stays
			if _, err := p.cfg.Index.Upsert(ctx, fromStorage); err != nil {
				return fmt.Errorf("bit: content index patch %s: %w", item, err)
			}
			o.Details = append(o.Details, "content index properties patched from storage")
		}
	}
	if patchProps {
		patched := *o.Audit
		patched.Properties = storage.UserProperties(o.Info.Properties)
		if patched.MimeType == "" {
			patched.MimeType = o.Info.MimeType
		}
		if patched.Size == nil {
			patched.Size = &size
		}
		// Put the patched entry first, then delete the old one: a crash in
		// between leaves two entries with the same checksum, never none.
		if _, err := p.cfg.AuditLog.Put(ctx, patched); err != nil {
			return fmt.Errorf("bit: audit log patch %s: %w", item, err)
		}
		if patched.Key() != o.Audit.Key() {
			if err := p.cfg.AuditLog.Delete(ctx, o.Audit.Key()); err != nil {
				return fmt.Errorf("bit: audit log patch %s: delete old entry: %w", item, err)
			}
		}
		o.Details = append(o.Details, "audit log entry properties patched from storage")
	}
	return nil
}

// send encodes t and puts it on q.
func send(ctx context.Context, q queue.Queue, t *task.Task, f task.Format) error {
	body, err := task.Encode(t, f)
	if err != nil {
		return fmt.Errorf("bit: encode %s: %w", t.Type, err)
	}
	if err := q.Send(ctx, queue.SendEntry{Body: body, Group: queue.GroupFor(t.Get(task.KeyAccount))}); err != nil {
		return fmt.Errorf("bit: send %s to %s: %w", t.Type, q.Name(), err)
	}
	return nil
}
