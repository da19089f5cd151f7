package storagestats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// DefaultMaxItems is Config.MaxItems' default: a million items, about a
// thousand list requests.
const DefaultMaxItems = 1_000_000

// RunIDFormat is the form of the run IDs the processor gives counts
// outside any run (the producers' run ID form).
const RunIDFormat = "20060102T150405Z"

// Config configures the processor. Stores, Stats and Continue are required.
type Config struct {
	Stores stores.RegistryOpener `validate:"required"`
	Stats  spacestats.Store      `validate:"required"`
	// Continue is the queue a continued count goes to: the queue
	// STORAGE_STATS tasks travel on (bit, in Mill's layout).
	Continue queue.Queue `validate:"required"`
	// MaxItems is how many items one task counts before it hands on
	// (default DefaultMaxItems).
	MaxItems int64
	// PageSize of the listing (default storage.DefaultPageSize).
	PageSize int
	// Checkpoints, when set, keeps each hand-on's counts so far, and a
	// continuation is counted on only when it carries exactly those (see
	// the package doc); without it a continuation's counts are taken as
	// it carries them.
	Checkpoints blob.Store
	// Format of continuation tasks (default task.FormatJSON).
	Format task.Format
	Clock  clock.Clock  // default the system clock
	Logger *slog.Logger // default slog.Default()
}

// defaultConfig holds the values withDefaults gives a Config's zero or
// negative fields.
var defaultConfig = Config{MaxItems: DefaultMaxItems, PageSize: storage.DefaultPageSize}

func (c Config) withDefaults() Config {
	defaults.FillNonPositive(&c, defaultConfig)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

func (c Config) validate() error {
	return validate.Struct("storagestats: Config", c).Err()
}

// Processor handles STORAGE_STATS tasks. Safe for concurrent use.
type Processor struct{ cfg Config }

var _ processors.Handler = (*Processor)(nil)

// New returns a processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Processor{cfg: cfg}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "storagestats" }

// Handle implements processors.Handler (see the package doc).
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	s, err := task.StorageStatsFrom(t)
	if err != nil {
		return processors.Permanent(err)
	}
	if err := storage.ValidateSpaceID(s.SpaceID); err != nil {
		return processors.Permanent(fmt.Errorf("storagestats: %w", err))
	}
	if _, err := p.cfg.Stores.Registry().Store(s.Account, s.StoreID); err != nil {
		return processors.Permanent(fmt.Errorf("storagestats: %w", err))
	}
	if err := p.checkHandOff(ctx, s); err != nil {
		return err
	}
	if s.Started.IsZero() {
		s.Started = p.cfg.Clock.Now().UTC()
	}
	if s.RunID == "" {
		s.RunID = s.Started.Format(RunIDFormat)
	}
	prov, err := p.cfg.Stores.Open(ctx, s.Account, s.StoreID)
	if err != nil {
		return fmt.Errorf("storagestats: open store %s/%s: %w", s.Account, s.StoreID, err)
	}
	log := p.cfg.Logger.With(t.LogAttrs()...).With("run_id", s.RunID)
	var counted int64
	for e, err := range storage.WalkEntries(ctx, prov, s.SpaceID, s.Marker, p.cfg.PageSize) {
		if errors.Is(err, storage.ErrNotFound) {
			log.Info("space not found; recorded as empty", "counted_before", s.Items)
			s.Items, s.Bytes = 0, 0
			break
		}
		if err != nil {
			return fmt.Errorf("storagestats: list %s/%s/%s: %w", s.Account, s.StoreID, s.SpaceID, err)
		}
		if counted == p.cfg.MaxItems {
			return p.handOn(ctx, s, log)
		}
		s.Items++
		s.Bytes += e.Size
		s.Marker = e.ID
		counted++
	}
	st := spacestats.Stats{RunID: s.RunID, Account: s.Account, StoreID: s.StoreID, SpaceID: s.SpaceID,
		Items: s.Items, Bytes: s.Bytes, Started: s.Started, Measured: p.cfg.Clock.Now()}
	if err := p.cfg.Stats.Put(ctx, st); err != nil {
		if errors.Is(err, spacestats.ErrInvalid) {
			return processors.Permanent(fmt.Errorf("storagestats: %w", err))
		}
		return fmt.Errorf("storagestats: %w", err)
	}
	log.Info("space counted", "items", st.Items, "bytes", st.Bytes)
	return nil
}

// handOn sends the continuation of a count that reached MaxItems items in
// this task.
func (p *Processor) handOn(ctx context.Context, s task.StorageStats, log *slog.Logger) error {
	s.Attempts = 0
	if err := p.saveHandOff(ctx, s); err != nil {
		return err
	}
	body, err := task.Encode(s.Task(), p.cfg.Format)
	if err != nil {
		return processors.Permanent(fmt.Errorf("storagestats: encode the continuation: %w", err))
	}
	if err := p.cfg.Continue.Send(ctx, queue.SendEntry{Body: body, Group: queue.GroupFor(s.Account)}); err != nil {
		return fmt.Errorf("storagestats: send the continuation to %s: %w", p.cfg.Continue.Name(), err)
	}
	log.Info("space count continues in another task", "items_so_far", s.Items, "bytes_so_far", s.Bytes,
		"marker", storage.ShortID(s.Marker))
	return nil
}
