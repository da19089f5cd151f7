package wiring

import (
	"errors"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/runs/memruns"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
)

// DefaultMemoryMaxReceiveCount is the redrive limit of the memory work
// queues, as `millctl setup` gives the SQS ones.
const DefaultMemoryMaxReceiveCount = 10

// MemoryConfig configures Memory.
type MemoryConfig struct {
	// Registry of the accounts; its stores must be fs stores.
	Registry *stores.Registry `validate:"required"`
	// Policies holds the duplication policies (for example policy.NewDir).
	Policies policy.Repository `validate:"required"`
	// ReportsDir is the directory the report processor writes to.
	ReportsDir string `validate:"required"`
	// QueuePrefix names the memory queues (default queue.DefaultPrefix).
	QueuePrefix string
	// VisibilityTimeout of every queue (default
	// memqueue.DefaultVisibilityTimeout).
	VisibilityTimeout time.Duration
	// MaxReceiveCount of the work queues' redrive to the dead-letter queue
	// (default DefaultMemoryMaxReceiveCount).
	MaxReceiveCount int
	Format          task.Format
	RecheckDelay    time.Duration
	Clock           clock.Clock
	Logger          *slog.Logger
}

// defaultMemoryConfig holds the values Memory gives a MemoryConfig's zero
// fields.
var defaultMemoryConfig = MemoryConfig{QueuePrefix: queue.DefaultPrefix, MaxReceiveCount: DefaultMemoryMaxReceiveCount}

// Memory returns the in-process dependencies of the dev mode and tests:
// seven memqueue queues (the six work queues redrive to the seventh,
// dead-letter), filesystem stores opened from the registry, an in-memory
// audit log, content index, bit log and statistics history, reports in ReportsDir and the
// policies read from Policies (uncached, so a policy written during a run
// applies at once).
func Memory(cfg MemoryConfig) (*Deps, error) {
	errs := []error{validate.Struct("wiring: MemoryConfig", cfg).Err()}
	if cfg.Registry != nil {
		for _, a := range cfg.Registry.Accounts {
			for _, s := range a.Stores {
				if s.Kind != storage.KindFS {
					errs = append(errs, errors.New("wiring: memory dependencies need fs stores; "+a.ID+"/"+s.ID+" is "+string(s.Kind)))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	defaults.Fill(&cfg, defaultMemoryConfig)
	clk := clock.Or(cfg.Clock)
	dlq := memqueue.New(queue.Name(cfg.QueuePrefix, queue.KeyDeadLetter), memqueue.Config{
		VisibilityTimeout: cfg.VisibilityTimeout, Clock: clk,
	})
	qs := Queues{queue.KeyDeadLetter: dlq}
	for _, k := range queue.DefaultPriority {
		qs[k] = memqueue.New(queue.Name(cfg.QueuePrefix, k), memqueue.Config{
			VisibilityTimeout: cfg.VisibilityTimeout, MaxReceiveCount: cfg.MaxReceiveCount,
			DeadLetter: dlq, Clock: clk,
		})
	}
	opener := stores.NewOpener(cfg.Registry, stores.OpenerConfig{
		FS: openFS,
	})
	return &Deps{
		Logger: cfg.Logger, Clock: clk, Queues: qs, Stores: opener, Policies: cfg.Policies,
		AuditLog: memauditlog.New(), Index: memcontentindex.New(), BitLog: membitlog.New(clk),
		Stats:   memspacestats.New(clk),
		Runs:    memruns.New(clk),
		Reports: fsreportstore.Store{Dir: cfg.ReportsDir},
		Format:  cfg.Format, RecheckDelay: cfg.RecheckDelay,
	}, nil
}

// MemQueue returns the memqueue behind key of a Deps made by Memory, or nil.
func (d *Deps) MemQueue(key string) *memqueue.Queue {
	q, _ := d.Queues[key].(*memqueue.Queue)
	return q
}
