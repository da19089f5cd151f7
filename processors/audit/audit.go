package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// DefaultEchoWindow is Config.EchoWindow's default.
const DefaultEchoWindow = 5 * time.Minute

// Notifier is told about new spaces (step 4). An error fails the task,
// which is then retried with all its (idempotent) steps.
type Notifier interface {
	SpaceCreated(ctx context.Context, e auditlog.Entry) error
}

// LogNotifier is the default Notifier: it logs one line per new space.
type LogNotifier struct{ Logger *slog.Logger }

// SpaceCreated implements Notifier.
func (n LogNotifier) SpaceCreated(ctx context.Context, e auditlog.Entry) error {
	l := n.Logger
	if l == nil {
		l = slog.Default()
	}
	l.InfoContext(ctx, "space created", "account", e.Account, "store_id", e.StoreID, "space_id", e.SpaceID,
		"user", e.UserID, "time", e.Time)
	return nil
}

// Opener opens a registered store's provider; *stores.Opener satisfies it.
type Opener interface {
	Open(ctx context.Context, account, storeID string) (storage.Provider, error)
}

// Config holds the processor's dependencies.
type Config struct {
	Log     auditlog.Log       // required
	Index   contentindex.Index // required
	DupHigh queue.Queue        // required: where DUP tasks go
	// Policies are read through policy.InForce: an account is duplicated
	// when it is listed in duplication-accounts.json and has a policy file
	// (usually a *policy.Cache).
	Policies policy.Reader // required
	// Notifier for CREATE_SPACE (default LogNotifier with Logger).
	Notifier Notifier
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Format of the DUP task bodies (default task.FormatJSON).
	Format task.Format
	// Resolver and Stores handle S3 event notifications; without them an
	// S3 event task is a permanent error.
	Resolver s3event.Resolver
	Stores   Opener
	// EchoWindow of the S3 echo rule (see the package doc); default
	// DefaultEchoWindow.
	EchoWindow time.Duration
	// Clock bounds S3 event times (none is later than now); default the
	// system clock.
	Clock clock.Clock
}

// WithDefaults returns c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Notifier == nil {
		c.Notifier = LogNotifier{Logger: c.Logger}
	}
	if c.EchoWindow == 0 {
		c.EchoWindow = DefaultEchoWindow
	}
	c.Clock = clock.Or(c.Clock)
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("config: Log is required"))
	}
	if c.Index == nil {
		errs = append(errs, errors.New("config: Index is required"))
	}
	if c.DupHigh == nil {
		errs = append(errs, errors.New("config: DupHigh is required"))
	}
	if c.Policies == nil {
		errs = append(errs, errors.New("config: Policies is required"))
	}
	if c.Format != task.FormatJSON && c.Format != task.FormatProperties {
		errs = append(errs, fmt.Errorf("unknown Format %v", c.Format))
	}
	if c.EchoWindow < 0 {
		errs = append(errs, errors.New("EchoWindow must not be negative"))
	}
	if (c.Resolver == nil) != (c.Stores == nil) {
		errs = append(errs, errors.New("config: Resolver and Stores go together"))
	}
	return errors.Join(errs...)
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
// malformed property), an entry too large for the audit log, or an S3 event
// for an unregistered bucket is a permanent error; anything else (a service
// failing) is retried.
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	if raw := t.Get(task.KeyS3Event); raw != "" {
		return p.handleS3(ctx, raw)
	}
	a, err := task.AuditFrom(t)
	if err != nil {
		return processors.Permanent(fmt.Errorf("audit: %w", err))
	}
	return p.Process(ctx, auditlog.FromAudit(a))
}

// Process runs the four steps for one audit event.
func (p *Processor) Process(ctx context.Context, e auditlog.Entry) error {
	item := auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
	if e.Action.ContentAction() && e.ContentID == "" {
		return processors.Permanentf("audit: %s %s: no content ID", e.Action, item)
	}
	// 1. Audit log.
	if _, err := p.cfg.Log.Put(ctx, e); err != nil {
		if errors.Is(err, auditlog.ErrTooLarge) || errors.Is(err, auditlog.ErrInvalid) {
			return processors.Permanent(fmt.Errorf("audit: %s %s: %w", e.Action, item, err))
		}
		return fmt.Errorf("audit: %s %s: %w", e.Action, item, err)
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
		if err := p.cfg.Notifier.SpaceCreated(ctx, e); err != nil {
			return fmt.Errorf("audit: %s %s: notify: %w", e.Action, item, err)
		}
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
		entries = append(entries, queue.SendEntry{Body: body})
	}
	if err := p.cfg.DupHigh.Send(ctx, entries...); err != nil {
		return fmt.Errorf("send %d DUP tasks: %w", len(entries), err)
	}
	return nil
}
