package bitreport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
)

// Defaults of Config.
const (
	// DefaultRecheckDelay is the wait before looking again at a space
	// whose items do not all have a result yet.
	DefaultRecheckDelay = 5 * time.Minute
	// DefaultMaxRechecks bounds the wait for bit check results made
	// through Config.Requeue: 2016 × 5 min = one week after the producer
	// finished listing the space. After that the report is written with
	// what the log holds (result ERROR, unchecked items as ERROR rows).
	DefaultMaxRechecks = 2016
	// KeyPrefix is the key prefix of the report files.
	KeyPrefix = "bit-integrity/"
	// KeyRechecks is the task property counting the re-checks made
	// through Config.Requeue (for the logs: the wait is measured from the
	// producer's record, not from this count).
	KeyRechecks = "rechecks"
)

// Config configures the processor.
type Config struct {
	Stores  stores.RegistryOpener `validate:"required"`
	Index   contentindex.Index    `validate:"required"`
	BitLog  bitlog.Log            `validate:"required"`
	Reports Reports               `validate:"required"`
	// Observer looks again at an item the comparison finds missing from
	// storage (the bit check's Observer over the same stores, index and
	// audit log).
	Observer *bit.Observer `validate:"required"`
	// BitErrorQueue receives the case-8 BIT_ERROR of an item missing in
	// two consecutive runs.
	BitErrorQueue queue.Queue `validate:"required"`
	// Requeue, when set, is the bit-report queue: a report whose space is
	// not complete yet is sent there again after RecheckDelay with its
	// "rechecks" property incremented, and the handler succeeds — so
	// waiting for a large space does not use up Workman's attempts. Without
	// it the handler returns processors.RetryAfter(RecheckDelay), which
	// counts as a failed attempt (MaxAttempts failures dead-letter it).
	Requeue queue.Queue
	// RecheckDelay (default DefaultRecheckDelay; at most queue.MaxDelay).
	RecheckDelay time.Duration
	// MaxRechecks (default DefaultMaxRechecks) bounds the wait through
	// Requeue: a space not complete MaxRechecks × RecheckDelay after the
	// producer finished listing it is reported with what the log holds.
	MaxRechecks int
	// Format of re-sent tasks (default task.FormatJSON).
	Format task.Format
	// PageSize of the listings (storage, index, bit log; default 1000).
	PageSize int
	// TempDir holds the report while it is written (default os.TempDir()).
	TempDir string
	// Notifier is told about every report whose result is FAILURE or
	// ERROR (notify.EventBitReport; default notify.Log). An error fails the
	// task, which is then repeated (idempotent) and notifies again.
	Notifier notify.Notifier
	// AdminSpace, when set, also stores each report in the account's
	// primary store, in the space AdminSpaceID under AdminContentID's name,
	// as the Java Mill does, so the account owner finds it through
	// DuraCloud. Written through the audited provider: AuditQueue is then
	// required.
	AdminSpace bool
	AuditQueue queue.Queue
	// Published, when set, is told of each report once the bit log holds
	// it (duradb.Reports: DuraCloud's bit_report row). An error fails the
	// task, which is then repeated (idempotent).
	Published Published
	// Prices is the price table a report's cost is estimated with
	// (default pricing.Default(): published us-east-1 list prices).
	Prices *pricing.Table
	// ReadPartSize is the size of the bit check's ranged GETs (its
	// Transfer.PartSize; default storage.DefaultPartSize): the estimate
	// counts a read of n bytes as ⌈n/ReadPartSize⌉ GETs.
	ReadPartSize int64
	Clock        clock.Clock  // default the system clock
	Logger       *slog.Logger // default slog.Default()
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{RecheckDelay: DefaultRecheckDelay, MaxRechecks: DefaultMaxRechecks, PageSize: 1000}

// WithDefaults returns c with the zero defaults filled in. Fill, not
// FillNonPositive: a negative RecheckDelay or MaxRechecks is an error
// (validate); only a negative PageSize is unset too.
func (c Config) WithDefaults() Config {
	c.PageSize = max(c.PageSize, 0)
	defaults.Fill(&c, defaultConfig)
	if c.Prices == nil {
		c.Prices = pricing.Default()
	}
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	c.Notifier = notify.Or(c.Notifier, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("bitreport: Config", c)
	p.Add("RecheckDelay", queue.CheckDelay(c.RecheckDelay))
	p.Check(c.MaxRechecks >= 0, "MaxRechecks", c.MaxRechecks, "not be negative")
	if c.AdminSpace { // the copy into the admin space is an audited write
		p.Require("AuditQueue", c.AuditQueue != nil)
	}
	return p.Err()
}

// Processor handles BIT_REPORT tasks. Safe for concurrent use.
type Processor struct {
	cfg Config
}

var _ processors.Handler = (*Processor)(nil)

// New returns a processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Processor{cfg: cfg}, nil
}

// Name is the processor's name.
func (p *Processor) Name() string { return "bitreport" }

// Key returns the report file's key: bit-integrity/{account}/{store}/
// {space}/{time}.tsv, where time is the run ID (the run's start, so a
// redelivered report replaces its file) or, for a run ID that is not a
// plain name, the current time in the same form.
func Key(r task.BitReport, now time.Time) string {
	stamp := r.RunID
	if stamp == "" || strings.ContainsAny(stamp, "/\\") || strings.Contains(stamp, "..") {
		stamp = now.UTC().Format("20060102T150405Z")
	}
	return KeyPrefix + path.Join(r.Account, r.StoreID, r.SpaceID, stamp) + ".tsv"
}

// Handle implements processors.Handler. See the package doc for the
// procedure.
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	r, err := task.BitReportFrom(t)
	if err != nil {
		return processors.Permanent(err)
	}
	st, err := p.cfg.Stores.Registry().Store(r.Account, r.StoreID)
	if err != nil {
		return processors.Permanent(fmt.Errorf("bitreport: %w", err))
	}
	log := p.cfg.Logger.With(t.LogAttrs()...).With("run_id", r.RunID)

	complete, java := true, r.RunID == ""
	if java {
		// The Java Mill's shape: report the checks made outside any run
		// (package doc, Java-shaped reports); no producer record to wait for.
		if r.Expected != nil {
			return processors.Permanent(fmt.Errorf("bitreport: %s/%s/%s: an expected count without a run ID: %w",
				r.Account, r.StoreID, r.SpaceID, ErrNoRun))
		}
		log.Info("Java-shaped BIT_REPORT: reporting the space's bit checks made outside a bit producer run")
	} else {
		var done bool
		if complete, done, err = p.wait(ctx, r, log); done || err != nil {
			return err
		}
	}
	prov, err := p.cfg.Stores.Open(ctx, r.Account, r.StoreID)
	if err != nil {
		return fmt.Errorf("bitreport: open store %s/%s: %w", r.Account, r.StoreID, err)
	}
	f, err := os.CreateTemp(p.cfg.TempDir, "bitreport-*.tsv")
	if err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := bufio.NewWriterSize(f, 64<<10)
	rep, problems, usage, err := p.compare(ctx, r, st.Kind, prov, complete, java, w, log)
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	now := p.cfg.Clock.Now()
	rep.Location, err = p.cfg.Reports.Put(ctx, Key(r, now), f, size)
	if err != nil {
		return err
	}
	cost := p.cfg.Prices.EstimateFor(st.Kind, usage)
	if err := p.putCost(ctx, CostKey(r, now), cost); err != nil {
		return err
	}
	adminLocation := ""
	if p.cfg.AdminSpace {
		if adminLocation, err = p.adminCopy(ctx, r, f, size, now, log); err != nil {
			return err
		}
	}
	rep.CreatedAt = now
	if err := p.cfg.BitLog.PutReport(ctx, rep); err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	if p.cfg.Published != nil {
		space, id := "", ""
		if adminLocation != "" {
			space, id = AdminSpaceID, AdminContentID(r, now)
		}
		if err := p.cfg.Published.ReportPublished(ctx, rep, space, id); err != nil {
			return fmt.Errorf("bitreport: %w", err)
		}
	}
	alarm := rep.Result == bitlog.ResultFailure || rep.Result == bitlog.ResultError
	if alarm {
		if err := p.cfg.Notifier.Notify(ctx, ReportEvent(rep, problems, adminLocation)); err != nil {
			return fmt.Errorf("bitreport: notify: %w", err)
		}
	}
	lvl := slog.LevelInfo
	if alarm {
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "bit integrity report", "result", string(rep.Result), "location", rep.Location,
		"total", rep.Counts.Total, "success", rep.Counts.Success, "failure", rep.Counts.Failure, "error", rep.Counts.Error,
		"estimated_cost_usd", cost.Total, "estimated_read_usd", cost.Read, "estimated_at_rest_usd", cost.AtRest,
		"estimated_stored_usd", cost.Stored, "prices_taken_on", cost.TakenOn)
	return nil
}

// wait applies the run rules and waits for the run's results (steps 0
// and 1 of the package doc): done when the task is handled (re-queued),
// complete when every listed item has a result.
func (p *Processor) wait(ctx context.Context, r task.BitReport, log *slog.Logger) (complete, done bool, err error) {
	// The run and the expected count are the producer's record, never the
	// message's claim (docs/ARCHITECTURE.md, Safety).
	rec, err := p.run(ctx, r)
	if err != nil {
		return false, true, err
	}
	expected := rec.Expected
	if r.Expected != nil && *r.Expected != expected {
		log.Warn("the task's expected count differs from the producer's record of the run; the record is used",
			"task_expected", *r.Expected, "expected", expected)
	}
	counts, err := p.cfg.BitLog.Count(ctx, r.RunID, r.Account, r.StoreID, r.SpaceID)
	if err != nil {
		return false, true, fmt.Errorf("bitreport: %w", err)
	}
	if counts.Total >= expected {
		return true, false, nil
	}
	rechecks, _ := strconv.Atoi(r.Extra[KeyRechecks]) // for the logs only: the message may lie
	waited := p.cfg.Clock.Now().Sub(rec.Listed)
	if p.cfg.Requeue == nil {
		return false, true, processors.RetryAfter(p.cfg.RecheckDelay, fmt.Errorf("bitreport: %d of %d items have a result", counts.Total, expected))
	}
	if waited < p.maxWait() {
		return false, true, p.requeue(ctx, r, min(max(rechecks, 0), 1<<30)+1, counts.Total, expected, log)
	}
	log.Warn("giving up waiting for bit check results; reporting what the log holds",
		"results", counts.Total, "expected", expected, "waited", waited.Round(time.Second), "rechecks", rechecks)
	return false, false, nil
}

// Rules a BIT_REPORT task must follow; a task breaking one is refused
// with a permanent error (Workman dead-letters it, naming the rule) and
// nothing is written.
var (
	// ErrNoRun: the task names no run but carries what only a run has
	// (an expected count): it is neither Mill's shape nor the Java Mill's.
	ErrNoRun = errors.New("a report without a run ID is the Java Mill's, which names nothing else")
	// ErrUnrecordedRun: the bit producer did not record the space in the
	// named run (bitlog.Runs).
	ErrUnrecordedRun = errors.New("a report is made only for a space the bit producer recorded in the run")
	// ErrListing: the producer has not finished listing the space in the
	// run; its own report is queued only after it has.
	ErrListing = errors.New("a report is made only once the bit producer finished listing the space in the run")
)

// run returns the producer's record of the report's space in its run, or
// a permanent error naming the rule the task breaks.
func (p *Processor) run(ctx context.Context, r task.BitReport) (bitlog.RunSpace, error) {
	where := r.Account + "/" + r.StoreID + "/" + r.SpaceID
	rec, err := p.cfg.BitLog.RunSpace(ctx, r.RunID, r.Account, r.StoreID, r.SpaceID)
	switch {
	case errors.Is(err, bitlog.ErrNoRun):
		return bitlog.RunSpace{}, processors.Permanent(fmt.Errorf("bitreport: %s, run %q: %w", where, r.RunID, ErrUnrecordedRun))
	case err != nil:
		return bitlog.RunSpace{}, fmt.Errorf("bitreport: %w", err)
	case !rec.Done():
		return bitlog.RunSpace{}, processors.Permanent(fmt.Errorf("bitreport: %s, run %q: %w", where, r.RunID, ErrListing))
	}
	return rec, nil
}

// maxWait is how long after the producer finished listing a space its
// report waits for bit check results: MaxRechecks × RecheckDelay.
func (p *Processor) maxWait() time.Duration {
	return time.Duration(p.cfg.MaxRechecks) * p.cfg.RecheckDelay
}

// requeue sends the report again after RecheckDelay.
func (p *Processor) requeue(ctx context.Context, r task.BitReport, rechecks int, have, expected int64, log *slog.Logger) error {
	nr := r
	nr.Extra = map[string]string{}
	for k, v := range r.Extra {
		nr.Extra[k] = v
	}
	nr.Extra[KeyRechecks] = strconv.Itoa(rechecks)
	body, err := task.Encode(nr.Task(), p.cfg.Format)
	if err != nil {
		return processors.Permanent(fmt.Errorf("bitreport: re-encode: %w", err))
	}
	if err := p.cfg.Requeue.Send(ctx, queue.SendEntry{Body: body, Delay: p.cfg.RecheckDelay, Group: queue.GroupFor(r.Account)}); err != nil {
		return fmt.Errorf("bitreport: re-queue the report: %w", err)
	}
	processors.Continue(ctx) // not done: the copy carries on
	log.Debug("space not complete; report re-queued", "results", have, "expected", expected,
		"rechecks", rechecks, "delay", p.cfg.RecheckDelay)
	return nil
}
