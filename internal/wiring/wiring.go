// Package wiring is the one place where Mill's task processors are built and
// registered: cmd/workman, `millctl run` and `millctl dev` all go through
// Workman (NewMux and Chain), so every way of running the mill serves
// exactly the same processors, behind the same middleware, with the same
// configuration rules (docs/ARCHITECTURE.md, Processors).
//
// A Deps holds what the processors need (queues by key, the store opener,
// policies, audit log, content index, bit log, report sink, message format,
// the bit check's re-check delay, …). Two constructors build one:
//
//   - AWS: SQS queues for the seven keys, the store registry and policies
//     from the config bucket (or a local directory), the DynamoDB audit log,
//     the PostgreSQL content index and bit log, reports in S3;
//   - Memory: memqueue queues sharing one dead-letter queue, filesystem
//     stores, in-memory logs and index, reports in a local directory — the
//     embedded dev mode and tests.
//
// NewMux then builds NOOP, AUDIT, DUP, BIT, BIT_ERROR, BIT_REPORT and
// STORAGE_STATS from a Deps and registers them in a processors.Mux; Chain
// wraps it in the middleware Workman runs it with; Workman (workman.go)
// does both and builds the manager, the one way all three build it, each
// passing only its Deps, queues and tunables (WorkmanConfig).
//
// The flag groups the binaries share are defined here once (flags.go,
// ClaimsFlags, NotifyFlag, TracingFlag); their defaults are package
// setup's, the names `millctl setup` creates. Tracing.Install
// (telemetry.go) is the one call that turns tracing on in every binary.
package wiring

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/biterror"
	"github.com/millfleet/mill/processors/bitreport"
	"github.com/millfleet/mill/processors/dup"
	"github.com/millfleet/mill/processors/noop"
	"github.com/millfleet/mill/processors/storagestats"
)

// Queues maps a queue key (queue.KeyAudit, …, queue.KeyDeadLetter) to its
// queue.
type Queues map[string]queue.Queue

// Get returns the queue of key, or an error naming the missing key.
func (q Queues) Get(key string) (queue.Queue, error) {
	if x, ok := q[key]; ok && x != nil {
		return x, nil
	}
	return nil, fmt.Errorf("wiring: no %s queue", key)
}

// Deps is everything a processor may need. NewMux checks that the
// dependencies of every processor it builds are present.
type Deps struct {
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Clock (default the system clock).
	Clock clock.Clock
	// Queues by key: AUDIT writes to dup-high; DUP, BIT and BIT_ERROR
	// write AUDIT tasks to audit; BIT and BIT_REPORT write to bit-error;
	// BIT_ERROR re-checks repaired items on bit; BIT_REPORT re-checks
	// through bit-report.
	Queues Queues
	// Stores opens the registered stores (and exposes the registry).
	Stores *stores.Opener
	// Policies are the duplication policy files (usually a *policy.Cache);
	// the audit and dup processors read the policies in force from them
	// (policy.InForce).
	Policies policy.Reader
	AuditLog auditlog.Log
	Index    contentindex.Index
	BitLog   bitlog.Log
	// Stats is the storage statistics history the STORAGE_STATS
	// processor writes.
	Stats spacestats.Store
	// Reports is where the report processor writes its TSV files, and
	// Workman the completion reports of producer runs.
	Reports bitreport.Reports
	// Runs is the record of producer runs Workman counts task outcomes
	// against (RunOutcomes; nil: none).
	Runs runs.Store
	// TempDir holds reports while they are written (default os.TempDir()).
	TempDir string
	// Format of every task body the processors send (default
	// task.FormatJSON).
	Format task.Format
	// RecheckDelay is the bit check's "wait 5 minutes before trying again"
	// (default bit.DefaultRecheckDelay); the report processor waits as
	// long for missing results.
	RecheckDelay time.Duration
	// UnreadableKinds: store kinds whose content the bit check does not
	// read back (C is N/A).
	UnreadableKinds []storage.Kind
	// Resolver maps S3 event notifications to registered items (default
	// s3event.RegistryResolver over the Stores registry).
	Resolver s3event.Resolver
	// Notifier tells operators about new spaces and bit reports with
	// problems (default notify.Log).
	Notifier notify.Notifier
	// ReportAdminSpace also stores each bit report in the account's
	// primary store's x-duracloud-admin space (bitreport.Config.AdminSpace).
	ReportAdminSpace bool
	// Prices is the price table of the bit reports' cost estimates
	// (bitreport.Config.Prices; nil: pricing.Default()).
	Prices *pricing.Table
	// Noop configures the NOOP processor (tests and benchmarks).
	Noop noop.Config
	// DupRetry bounds the dup processor's in-processor retries (default
	// dup's defaults).
	DupRetry dup.Retry
	// DupRestoreDays is dup.Config.RestoreArchivedDays: ask for a restore
	// of an archived source item, kept that many days (0: do not).
	DupRestoreDays int
	// Transfer: parts in flight and their size for streamed copies and
	// the bit check's reads (zero: storage's defaults, 4 of 8 MiB).
	Transfer storage.Transfer
	// Checkpoints, when set, makes copies and bit checks of items of at
	// least ResumeMinSize resumable (docs/ARCHITECTURE.md, Transfers); the
	// bit check saves its progress every CheckpointEvery bytes (zero: the
	// processors' defaults).
	Checkpoints     blob.Store
	ResumeMinSize   int64
	CheckpointEvery int64
	// Probes ask the dependencies whether they answer again while their
	// circuit is open (workman.Config.Probes): AWS wires "postgres" (a
	// ping of the pool) and "dynamodb" (a describe of the audit table).
	Probes map[string]workman.Probe
	// Agent is this Workman's instance and Mill's version, recorded in
	// the bit-log rows of the bit and bit error processors (zero: none).
	Agent bitlog.Agent
	// DuraCloudDB, when set, is DuraCloud's MySQL mill database: the
	// content index's changes, completed bit reports and statistics rows
	// are mirrored there (pkg/duradb) so DuraStore and DurAdmin see them.
	DuraCloudDB duradb.DB
	// Wrap, when set, wraps each processor before it is registered (tests
	// and the dev mode's fault hooks use it to observe or disable a
	// processor).
	Wrap func(t task.Type, h processors.Handler) processors.Handler
}

// WithDefaults returns d with its zero optional fields filled in.
func (d Deps) WithDefaults() Deps {
	d.Logger = cmp.Or(d.Logger, slog.Default())
	d.Clock = clock.Or(d.Clock)
	if d.RecheckDelay <= 0 {
		d.RecheckDelay = bit.DefaultRecheckDelay
	}
	if d.Resolver == nil && d.Stores != nil {
		d.Resolver = s3event.RegistryResolver{Registry: d.Stores.Registry()}
	}
	d.Notifier = notify.Or(d.Notifier, d.Logger)
	return d
}

// Types are the task types NewMux serves, in registration order.
var Types = []task.Type{task.TypeNoop, task.TypeAudit, task.TypeDup, task.TypeBit, task.TypeBitError, task.TypeBitReport, task.TypeStorageStats}

// NewMux builds the processors of types (every type of Types when none is
// given) from d and returns a mux serving them. Only the dependencies of
// those processors are required, so a worker restricted to NOOP needs no
// storage or database; every missing dependency is reported at once.
func NewMux(d *Deps, types ...task.Type) (*processors.Mux, error) {
	if d == nil {
		return nil, errors.New("wiring: no dependencies")
	}
	if len(types) == 0 {
		types = Types
	}
	for _, t := range types {
		if !slices.Contains(Types, t) {
			return nil, fmt.Errorf("wiring: no processor for task type %q", t)
		}
	}
	hs, err := build(d.WithDefaults(), types)
	if err != nil {
		return nil, err
	}
	mux := processors.NewMux()
	for _, t := range Types {
		h, ok := hs[t]
		if !ok {
			continue
		}
		if d.Wrap != nil {
			h = d.Wrap(t, h)
		}
		mux.Register(t, h)
	}
	return mux, nil
}

// ChainConfig is what Chain wraps around the processors.
type ChainConfig struct {
	// Logger receives one line per task (processors.Logging; default
	// slog.Default()).
	Logger *slog.Logger
	// Observer, when set, is told the outcome of every task
	// (processors.Metrics).
	Observer processors.Observer
	// Outer middleware goes outside all the others, first outermost (the
	// fleet-wide pause: a task it stops is still logged and counted).
	Outer []processors.Middleware
}

// Chain is the handler every way of running the mill (cmd/workman,
// `millctl run`, `millctl dev`) gives Workman: h (the mux) wrapped,
// outermost first, in cfg.Outer, Logging, Metrics and Recover. Workman adds
// its own Recover and the per-type Timeout inside it (pkg/workman).
func Chain(h processors.Handler, cfg ChainConfig) processors.Handler {
	mws := append([]processors.Middleware(nil), cfg.Outer...)
	mws = append(mws, processors.Logging(cfg.Logger), processors.Metrics(cfg.Observer), processors.Recover())
	return processors.Chain(h, mws...)
}

// NeedsStorage reports whether any of types needs more than queues (every
// type but NOOP does: stores, policies, logs, the content index).
func NeedsStorage(types []task.Type) bool {
	return slices.ContainsFunc(types, func(t task.Type) bool { return t != task.TypeNoop })
}

func build(d Deps, types []task.Type) (map[task.Type]processors.Handler, error) {
	if !NeedsStorage(types) {
		return map[task.Type]processors.Handler{task.TypeNoop: noop.New(d.Noop)}, nil
	}
	var errs []error
	need := func(ok bool, what string) {
		if !ok {
			errs = append(errs, fmt.Errorf("wiring: Deps.%s is required", what))
		}
	}
	need(d.Stores != nil, "Stores")
	need(d.Policies != nil, "Policies")
	need(d.AuditLog != nil, "AuditLog")
	need(d.Index != nil, "Index")
	need(d.BitLog != nil, "BitLog")
	need(d.Reports != nil, "Reports")
	need(d.Stats != nil, "Stats")
	q := map[string]queue.Queue{}
	for _, k := range []string{queue.KeyAudit, queue.KeyDupHigh, queue.KeyBit, queue.KeyBitError, queue.KeyBitReport} {
		x, err := d.Queues.Get(k)
		if err != nil {
			errs = append(errs, err)
		}
		q[k] = x
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	var published bitreport.Published
	if d.DuraCloudDB != nil { // the sinks Mill writes, mirrored (pkg/duradb)
		d.Index = duradb.NewManifest(d.Index, d.Stores, d.DuraCloudDB, d.Logger)
		d.Stats = duradb.NewStats(d.Stats, d.DuraCloudDB, d.Clock, d.Logger)
		published = duradb.NewReports(d.DuraCloudDB, d.Logger)
	}
	hs := map[task.Type]processors.Handler{task.TypeNoop: noop.New(d.Noop)}
	add := func(t task.Type, h processors.Handler, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("wiring: %s processor: %w", t, err))
			return
		}
		hs[t] = h
	}

	ap, err := audit.New(audit.Config{
		Log: d.AuditLog, Index: d.Index, DupHigh: q[queue.KeyDupHigh], Policies: d.Policies,
		Notifier: d.Notifier, Logger: d.Logger, Format: d.Format,
		Resolver: d.Resolver, Stores: d.Stores, Clock: d.Clock,
	})
	add(task.TypeAudit, ap, err)

	dp, err := dup.New(dup.Config{
		Opener: d.Stores, Audit: dup.AuditTo(q[queue.KeyAudit], d.Format, d.Clock),
		Live: dup.FromIndex(d.Index), History: d.AuditLog, Policies: d.Policies, Retry: d.DupRetry,
		RestoreArchivedDays: d.DupRestoreDays, Clock: d.Clock, Logger: d.Logger,
		Transfer: d.Transfer, Checkpoints: d.Checkpoints, ResumeMinSize: d.ResumeMinSize,
	})
	add(task.TypeDup, dp, err)

	// The bit check and the bit-error processor write alike.
	common := bit.Common{RecheckDelay: d.RecheckDelay, Format: d.Format, Agent: d.Agent, Clock: d.Clock, Logger: d.Logger}
	bp, err := bit.New(bit.Config{
		Stores: d.Stores, Index: d.Index, AuditLog: d.AuditLog, BitLog: d.BitLog,
		AuditQueue: q[queue.KeyAudit], BitErrorQueue: q[queue.KeyBitError],
		Common: common,
		ReadSettings: bit.ReadSettings{UnreadableKinds: d.UnreadableKinds,
			Transfer: d.Transfer, Checkpoints: d.Checkpoints, ResumeMinSize: d.ResumeMinSize, CheckpointEvery: d.CheckpointEvery},
	})
	add(task.TypeBit, bp, err)

	// HeadFirst: these look at few items, and never GET an archived one.
	observer := &bit.Observer{Stores: d.Stores, Index: d.Index, AuditLog: d.AuditLog,
		ReadSettings: bit.ReadSettings{UnreadableKinds: d.UnreadableKinds, Transfer: d.Transfer}, HeadFirst: true}
	if jobs, ok := d.BitLog.(bitlog.AtRestJobs); ok {
		observer.AtRest = jobs
	}
	ep, err := biterror.New(biterror.Config{
		Stores: d.Stores, Observer: observer, BitLog: d.BitLog, AuditQueue: q[queue.KeyAudit], BitQueue: q[queue.KeyBit],
		Common: common,
	})
	add(task.TypeBitError, ep, err)

	rp, err := bitreport.New(bitreport.Config{
		Stores: d.Stores, Index: d.Index, BitLog: d.BitLog, Reports: d.Reports,
		Observer: observer, BitErrorQueue: q[queue.KeyBitError],
		Requeue: q[queue.KeyBitReport], RecheckDelay: d.RecheckDelay, Format: d.Format,
		TempDir: d.TempDir, Notifier: d.Notifier, AdminSpace: d.ReportAdminSpace, AuditQueue: q[queue.KeyAudit],
		Prices: d.Prices, ReadPartSize: d.Transfer.PartSize, Clock: d.Clock, Logger: d.Logger, Published: published,
	})
	add(task.TypeBitReport, rp, err)

	// STORAGE_STATS travels on the bit queue (docs/ARCHITECTURE.md,
	// Queues): a continued count goes back there.
	sp, err := storagestats.New(storagestats.Config{
		Stores: d.Stores, Stats: d.Stats, Continue: q[queue.KeyBit], Checkpoints: d.Checkpoints,
		Format: d.Format, Clock: d.Clock, Logger: d.Logger,
	})
	add(task.TypeStorageStats, sp, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for t := range hs {
		if !slices.Contains(types, t) {
			delete(hs, t)
		}
	}
	return hs, nil
}

// ParseTypes reads a task-type list flag: "all" (every type in Types) or a
// comma-separated list of task types.
func ParseTypes(s string) ([]task.Type, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "all" {
		return Types, nil
	}
	var out []task.Type
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		t := task.Type(strings.ToUpper(p))
		if !t.Known() {
			return nil, fmt.Errorf("task types: unknown task type %q", p)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("task types: no task type in %q", s)
	}
	return out, nil
}
