package audit

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
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// ErrNotConfirmed reports an AUDIT task its store contradicts (the package
// doc, Checked against the store): forged or mistaken, nothing is recorded
// and the task is permanent.
var ErrNotConfirmed = errors.New("audit: not confirmed by the store")

// DefaultEchoWindow is Config.EchoWindow's default.
const DefaultEchoWindow = 5 * time.Minute

// Opener opens a registered store's provider; *stores.Opener satisfies it.
type Opener = storage.Opener

// Config holds the processor's dependencies.
type Config struct {
	Log     auditlog.Log       `validate:"required"`
	Index   contentindex.Index `validate:"required"`
	DupHigh queue.Queue        `validate:"required"` // where DUP tasks go
	// Policies are read through policy.InForce: an account is duplicated
	// when it is listed in duplication-accounts.json and has a policy file
	// (usually a *policy.Cache).
	Policies policy.Reader `validate:"required"`
	// Notifier is told about new spaces (step 4: notify.SpaceCreated); an
	// error fails the task, which is then retried with all its
	// (idempotent) steps. Default notify.Log with Logger.
	Notifier notify.Notifier
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Format of the DUP task bodies (default task.FormatJSON).
	Format task.Format
	// Stores opens the store an AUDIT task or S3 event names, to check
	// its claims against the store (required).
	Stores Opener `validate:"required"`
	// Resolver maps S3 event notifications to registered items; without
	// it an S3 event task is a permanent error.
	Resolver s3event.Resolver
	// EchoWindow of the S3 echo rule (see the package doc); default
	// DefaultEchoWindow.
	EchoWindow time.Duration
	// Clock bounds event times (none is later than now); default the
	// system clock.
	Clock clock.Clock
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{EchoWindow: DefaultEchoWindow}

// WithDefaults returns c with defaults filled in.
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	c.Notifier = notify.Or(c.Notifier, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("audit: Config", c)
	p.Add("Format", c.Format.Validate())
	p.Check(c.EchoWindow >= 0, "EchoWindow", c.EchoWindow, "not be negative")
	return p.Err()
}

// Processor is the AUDIT processor (a processors.Handler). Safe for
// concurrent use when its dependencies are.
type Processor struct{ cfg Config }

var _ processors.Handler = (*Processor)(nil)

// New returns the processor cfg describes.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("audit: config: %w", err)
	}
	return &Processor{cfg: cfg}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "audit" }

// Handle processes one AUDIT task. A task that cannot be read (a missing or
// malformed property), names a store the registry does not know, is
// contradicted by the store (ErrNotConfirmed), makes an entry too large for
// the audit log, or is an S3 event for an unregistered bucket is a
// permanent error; anything else (a service failing) is retried.
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	if raw := t.Get(task.KeyS3Event); raw != "" {
		return p.handleS3(ctx, raw)
	}
	a, err := task.AuditFrom(t)
	if err != nil {
		return processors.Permanent(fmt.Errorf("audit: %w", err))
	}
	e := auditlog.FromAudit(a)
	e.Time = p.notLater(e.Time)
	if e.SourceStoreID, err = p.sourceStore(ctx, e); err != nil {
		return err
	}
	history, err := p.confirm(ctx, e)
	if err != nil {
		return err
	}
	if history != "" {
		p.cfg.Logger.InfoContext(ctx, "audit: "+history+"; recorded in the audit log only",
			"account", e.Account, "store_id", e.StoreID, "space_id", e.SpaceID, "content_id", storage.ShortID(e.ContentID), "action", e.Action)
		return p.record(ctx, e)
	}
	return p.Process(ctx, e)
}

// notLater returns at, or now when at is later: a forged time in the future
// would pin the content index row (an older event changes nothing) and
// hide the real changes that follow.
func (p *Processor) notLater(at time.Time) time.Time {
	if now := p.cfg.Clock.Now(); at.After(now) {
		return now
	}
	return at
}

// confirm checks what an AUDIT task claims against its store before any
// step acts on it, by the rules of the package doc (Checked against the
// store). It returns why the event is history only (recorded in the audit
// log, neither indexed nor duplicated), or "" when every step is to run.
// A contradiction is a permanent ErrNotConfirmed.
func (p *Processor) confirm(ctx context.Context, e auditlog.Entry) (history string, err error) {
	item := auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
	var check func(storage.Provider) error
	switch {
	case e.Action == task.ActionDeleteSpace:
		check = func(prov storage.Provider) error {
			_, err := prov.SpaceACLs(ctx, e.SpaceID)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				return nil
			case err != nil:
				return err
			}
			return fmt.Errorf("%w: %s of %s, but the space exists", ErrNotConfirmed, e.Action, item)
		}
	case e.Action == task.ActionCreateSpace:
		check = func(prov storage.Provider) error {
			_, err := prov.SpaceACLs(ctx, e.SpaceID)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				return fmt.Errorf("%w: %s of %s, but the space does not exist", ErrNotConfirmed, e.Action, item)
			case err != nil:
				return err
			}
			return nil
		}
	case e.Action.ContentAction() && e.ContentID != "":
		check = func(prov storage.Provider) error {
			info, err := prov.Head(ctx, e.SpaceID, e.ContentID)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				if e.Action != task.ActionDeleteContent {
					history = "a write of an item not in the store (deleted since, or forged)"
				}
				return nil
			case err != nil:
				return err
			case !writtenBefore(info.Modified, e.Time):
				if e.Action == task.ActionDeleteContent {
					history = "a delete of an item written again since"
				}
				return nil
			case e.Action == task.ActionDeleteContent:
				return fmt.Errorf("%w: %s of %s at %s, but the item exists (last written %s)", ErrNotConfirmed, e.Action, item,
					e.Time.Format(time.RFC3339Nano), info.Modified.Format(time.RFC3339))
			}
			if have := checksumOf(info); e.Checksum != "" && have != "" && !strings.EqualFold(have, e.Checksum) {
				return fmt.Errorf("%w: %s of %s with checksum %q, but the item's is %q (last written %s)", ErrNotConfirmed, e.Action, item,
					e.Checksum, have, info.Modified.Format(time.RFC3339))
			}
			return nil
		}
	default:
		return "", nil
	}
	prov, err := p.cfg.Stores.Open(ctx, e.Account, e.StoreID)
	if err == nil {
		err = check(prov)
	}
	switch {
	case errors.Is(err, ErrNotConfirmed):
		return "", processors.Permanent(err)
	case err != nil:
		return "", fmt.Errorf("audit: %s %s: check against the store: %w", e.Action, item, err)
	}
	return history, nil
}

// writtenBefore reports whether an item last written at modified was
// surely written before an event at at, allowing for stores that keep
// whole seconds (S3's LastModified): false in the event's own second, and
// when the store does not say.
func writtenBefore(modified, at time.Time) bool {
	return !modified.IsZero() && modified.Before(at.Truncate(time.Second))
}

// checksumOf returns the MD5 the item's copy has by the one rule
// (storage.ChecksumOf, without reading the bytes): the provider's own
// digest (an S3 single-part ETag) over the MD5 Mill recorded with it, which
// counts only when the provider has no MD5 of its own; "" when neither is
// known. A recorded MD5 the provider contradicts — a copy replaced with
// its metadata kept — is never the item's checksum, so a re-sync from what
// storage holds is confirmed and an event repeating the stale claim is not.
func checksumOf(info *storage.Info) string { return storage.ChecksumOf(info, nil).MD5 }

// Process runs the four steps for one audit event.
func (p *Processor) Process(ctx context.Context, e auditlog.Entry) error {
	item := auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
	if e.Action.ContentAction() && e.ContentID == "" {
		return processors.Permanentf("audit: %s %s: no content ID", e.Action, item)
	}
	// 1. Audit log.
	if err := p.record(ctx, e); err != nil {
		return err
	}
	// 2. Content index.
	if err := p.index(ctx, e); err != nil {
		if errors.Is(err, contentindex.ErrInvalid) {
			return processors.Permanent(fmt.Errorf("audit: %s %s: %w", e.Action, item, err))
		}
		return fmt.Errorf("audit: %s %s: %w", e.Action, item, err)
	}
	// 3. Duplication.
	if err := p.duplicate(ctx, e); err != nil {
		return fmt.Errorf("audit: %s %s: %w", e.Action, item, err)
	}
	// 4. Notification.
	if e.Action == task.ActionCreateSpace {
		if err := p.cfg.Notifier.Notify(ctx, notify.SpaceCreated(e.Account, e.StoreID, e.SpaceID, e.UserID, e.Time)); err != nil {
			return fmt.Errorf("audit: %s %s: notify: %w", e.Action, item, err)
		}
	}
	return nil
}

// record writes e to the audit log (step 1).
func (p *Processor) record(ctx context.Context, e auditlog.Entry) error {
	if _, err := p.cfg.Log.Put(ctx, e); err != nil {
		item := auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
		if errors.Is(err, auditlog.ErrTooLarge) || errors.Is(err, auditlog.ErrInvalid) {
			return processors.Permanent(fmt.Errorf("audit: %s %s: %w", e.Action, item, err))
		}
		return fmt.Errorf("audit: %s %s: %w", e.Action, item, err)
	}
	return nil
}

func (p *Processor) index(ctx context.Context, e auditlog.Entry) error {
	it := contentindex.Item{Account: e.Account, StoreID: e.StoreID, SpaceID: e.SpaceID, ContentID: e.ContentID}
	var err error
	switch e.Action {
	case task.ActionAddContent, task.ActionCopyContent, task.ActionSetContentProperties:
		_, err = p.cfg.Index.Upsert(ctx, contentindex.Entry{Item: it, Checksum: e.Checksum, Size: e.Size,
			MimeType: e.MimeType, Properties: e.Properties, Modified: e.Time})
	case task.ActionDeleteContent:
		_, err = p.cfg.Index.MarkDeleted(ctx, it, e.Time)
	case task.ActionDeleteSpace:
		_, err = p.cfg.Index.MarkSpaceDeleted(ctx, e.Account, e.StoreID, e.SpaceID, e.Time)
	}
	return err
}

// Duplicable reports whether an action is duplicated to other stores: every
// write action (content and space actions) is.
func Duplicable(a task.Action) bool { return a.Known() }

func (p *Processor) duplicate(ctx context.Context, e auditlog.Entry) error {
	if !Duplicable(e.Action) {
		return nil
	}
	pol, err := policy.InForce(ctx, p.cfg.Policies, e.Account)
	switch {
	case errors.Is(err, policy.ErrNotFound):
		return nil // not duplicated
	case err != nil:
		return fmt.Errorf("policy of %q: %w", e.Account, err)
	}
	sps := pol.ForSource(e.SpaceID, e.StoreID)
	if len(sps) == 0 {
		return nil
	}
	content := e.ContentID
	if !e.Action.ContentAction() {
		content = ""
	}
	entries := make([]queue.SendEntry, 0, len(sps))
	for _, sp := range sps {
		d := task.Dup{Account: e.Account, StoreID: e.StoreID, DestStoreID: sp.DestStoreID, SpaceID: e.SpaceID, ContentID: content}
		body, err := task.Encode(d.Task(), p.cfg.Format)
		if err != nil {
			return fmt.Errorf("encode DUP %s: %w", sp, err)
		}
		entries = append(entries, queue.SendEntry{Body: body, Group: queue.GroupFor(e.Account)})
	}
	if err := p.cfg.DupHigh.Send(ctx, entries...); err != nil {
		return fmt.Errorf("send %d DUP tasks: %w", len(entries), err)
	}
	return nil
}
