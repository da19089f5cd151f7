package bitreport

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/validate"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
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
	// DefaultMaxRechecks bounds the re-checks made through Config.Requeue:
	// 2016 × 5 min = one week. After that the report is written with
	// what the log holds (result ERROR, unchecked items as ERROR rows).
	DefaultMaxRechecks = 2016
	// KeyPrefix is the key prefix of the report files.
	KeyPrefix = "bit-integrity/"
	// KeyRechecks is the task property counting the re-checks made
	// through Config.Requeue.
	KeyRechecks = "rechecks"
)

// Stores opens registered stores and exposes the registry (*stores.Opener
// implements it).
type Stores interface {
	Open(ctx context.Context, account, storeID string) (storage.Provider, error)
	Registry() *stores.Registry
}

// Config configures the processor. Stores, Index, BitLog, Reports,
// Observer and BitErrorQueue are required.
type Config struct {
	Stores  Stores
	Index   contentindex.Index
	BitLog  bitlog.Log
	Reports Reports
	// Observer looks again at an item the comparison finds missing from
	// storage (the bit check's Observer over the same stores, index and
	// audit log).
	Observer *bit.Observer
	// BitErrorQueue receives the case-8 BIT_ERROR of an item missing in
	// two consecutive runs.
	BitErrorQueue queue.Queue
	// Requeue, when set, is the bit-report queue: a report whose space is
	// not complete yet is sent there again after RecheckDelay with its
	// "rechecks" property incremented, and the handler succeeds — so
	// waiting for a large space does not use up Workman's attempts. Without
	// it the handler returns processors.RetryAfter(RecheckDelay), which
	// counts as a failed attempt (MaxAttempts failures dead-letter it).
	Requeue queue.Queue
	// RecheckDelay (default DefaultRecheckDelay; at most queue.MaxDelay).
	RecheckDelay time.Duration
	// MaxRechecks (default DefaultMaxRechecks) bounds the re-checks made
	// through Requeue.
	MaxRechecks int
	// Format of re-sent tasks (default task.FormatJSON).
	Format task.Format
	// PageSize of the listings (storage, index, bit log; default 1000).
	PageSize int
	// TempDir holds the report while it is written (default os.TempDir()).
	TempDir string
	// Notifier is told about every report whose result is not SUCCESS
	// (notify.EventBitReport; default notify.Log). An error fails the
	// task, which is then repeated (idempotent) and notifies again.
	Notifier notify.Notifier
	// AdminSpace, when set, also stores each report in the account's
	// primary store, in the space AdminSpaceID under AdminContentID's name,
	// as the Java Mill does, so the account owner finds it through
	// DuraCloud. Written through the audited provider: AuditQueue is then
	// required.
	AdminSpace bool
	AuditQueue queue.Queue
	Clock      clock.Clock  // default the system clock
	Logger     *slog.Logger // default slog.Default()
}

// WithDefaults returns c with the zero defaults filled in.
func (c Config) WithDefaults() Config {
	if c.RecheckDelay == 0 {
		c.RecheckDelay = DefaultRecheckDelay
	}
	if c.MaxRechecks == 0 {
		c.MaxRechecks = DefaultMaxRechecks
	}
	if c.PageSize <= 0 {
		c.PageSize = 1000
	}
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Notifier = notify.Or(c.Notifier, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.New("bitreport: Config")
	p.Require("Stores", c.Stores != nil)
	p.Require("Index", c.Index != nil)
	p.Require("BitLog", c.BitLog != nil)
	p.Require("Reports", c.Reports != nil)
	p.Require("Observer", c.Observer != nil)
	p.Require("BitErrorQueue", c.BitErrorQueue != nil)
	p.Check(c.RecheckDelay >= 0 && c.RecheckDelay <= queue.MaxDelay, "RecheckDelay", c.RecheckDelay, "be within 0..%s", queue.MaxDelay)
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
// redelivered report replaces its file) or, for a report outside any run,
// the current time in the same form.
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

	var expected int64
	if r.Expected != nil {
		expected = *r.Expected
	}
	counts, err := p.cfg.BitLog.Count(ctx, r.RunID, r.Account, r.StoreID, r.SpaceID)
	if err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	complete := counts.Total >= expected
	if !complete {
		rechecks, _ := strconv.Atoi(r.Extra[KeyRechecks])
		if p.cfg.Requeue == nil {
			return processors.RetryAfter(p.cfg.RecheckDelay, fmt.Errorf("bitreport: %d of %d items have a result", counts.Total, expected))
		}
		if rechecks < p.cfg.MaxRechecks {
			return p.requeue(ctx, r, rechecks+1, counts.Total, expected, log)
		}
		log.Warn("giving up waiting for bit check results; reporting what the log holds",
			"results", counts.Total, "expected", expected, "rechecks", rechecks)
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
	rep, problems, err := p.compare(ctx, r, st.Kind, prov, complete, w, log)
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
	if rep.Result != bitlog.ResultSuccess {
		if err := p.cfg.Notifier.Notify(ctx, ReportEvent(rep, problems, adminLocation)); err != nil {
			return fmt.Errorf("bitreport: notify: %w", err)
		}
	}
	lvl := slog.LevelInfo
	if rep.Result != bitlog.ResultSuccess {
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "bit integrity report", "result", string(rep.Result), "location", rep.Location,
		"total", rep.Counts.Total, "success", rep.Counts.Success, "failure", rep.Counts.Failure, "error", rep.Counts.Error)
	return nil
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
	if err := p.cfg.Requeue.Send(ctx, queue.SendEntry{Body: body, Delay: p.cfg.RecheckDelay}); err != nil {
		return fmt.Errorf("bitreport: re-queue the report: %w", err)
	}
	log.Debug("space not complete; report re-queued", "results", have, "expected", expected,
		"rechecks", rechecks, "delay", p.cfg.RecheckDelay)
	return nil
}

// MaxProblems is how many problem rows a report's notification lists.
const MaxProblems = 20

// compare merges the space's storage listing, its live content index rows
// and the run's bit log rows (three listings in byte-wise content ID
// order, one page of each in memory), records ERROR rows for items missing
// from storage or from the index, writes every row to w and counts them.
// It also returns the first MaxProblems rows that are not SUCCESS.
func (p *Processor) compare(ctx context.Context, r task.BitReport, kind storage.Kind, prov storage.Provider, complete bool, w io.Writer, log *slog.Logger) (rep bitlog.Report, problems []bitlog.Row, err error) {
	rep, err = p.compareRows(ctx, r, kind, prov, complete, w, log, func(row bitlog.Row) {
		if row.Result != bitlog.ResultSuccess && len(problems) < MaxProblems {
			problems = append(problems, row)
		}
	})
	return rep, problems, err
}

// compareRows is compare, telling seen about every row of the report.
func (p *Processor) compareRows(ctx context.Context, r task.BitReport, kind storage.Kind, prov storage.Provider, complete bool, w io.Writer, log *slog.Logger, seen func(bitlog.Row)) (bitlog.Report, error) {
	rep := bitlog.Report{RunID: r.RunID, Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID}
	if _, err := io.WriteString(w, strings.Join(Header, "\t")+"\n"); err != nil {
		return rep, fmt.Errorf("bitreport: %w", err)
	}
	nextS, stopS := iter.Pull2(storage.Walk(ctx, prov, r.SpaceID, "", p.cfg.PageSize))
	defer stopS()
	nextI, stopI := iter.Pull2(p.indexIDs(ctx, r))
	defer stopI()
	nextL, stopL := iter.Pull2(p.logRows(ctx, r))
	defer stopL()

	type head[T any] struct {
		v   T
		id  string
		ok  bool
		err error
	}
	pullS := func() (h head[string]) {
		var ok bool
		h.id, h.err, ok = nextS()
		h.v, h.ok = h.id, ok && h.err == nil
		if errors.Is(h.err, storage.ErrNotFound) { // the space is gone: everything indexed is missing
			h.err, h.ok = nil, false
		}
		return h
	}
	pullI := func() (h head[contentindex.Entry]) {
		var ok bool
		h.v, h.err, ok = nextI()
		h.id, h.ok = h.v.ContentID, ok && h.err == nil
		return h
	}
	pullL := func() (h head[bitlog.Row]) {
		var ok bool
		h.v, h.err, ok = nextL()
		h.id, h.ok = h.v.ContentID, ok && h.err == nil
		return h
	}
	s, ix, l := pullS(), pullI(), pullL()
	now := p.cfg.Clock.Now()
	for {
		for _, err := range []error{s.err, ix.err, l.err} {
			if err != nil {
				return rep, fmt.Errorf("bitreport: %s/%s/%s: %w", r.Account, r.StoreID, r.SpaceID, err)
			}
		}
		if !s.ok && !ix.ok && !l.ok {
			break
		}
		id := ""
		for _, h := range []struct {
			ok bool
			id string
		}{{s.ok, s.id}, {ix.ok, ix.id}, {l.ok, l.id}} {
			if h.ok && (id == "" || h.id < id) {
				id = h.id
			}
		}
		inS, inI, hasRow := s.ok && s.id == id, ix.ok && ix.id == id, l.ok && l.id == id
		var row *bitlog.Row
		if hasRow {
			row = &l.v
		}
		base := bitlog.Row{RunID: r.RunID, Account: r.Account, StoreID: r.StoreID, StoreKind: string(kind),
			SpaceID: r.SpaceID, ContentID: id, Result: bitlog.ResultError, CheckedAt: now}
		var add *bitlog.Row
		var missing *bit.Observation // set when add reports an item missing in two runs
		switch {
		case inI && !inS && (row == nil || row.Result == bitlog.ResultSuccess):
			n, o, err := p.missing(ctx, r, ix.v, base, log)
			if err != nil {
				return rep, err
			}
			add, missing = n, o
		case inS && !inI && (row == nil || row.Result == bitlog.ResultSuccess):
			n := base
			n.Details = "in storage but missing from the content index"
			add = &n
		case inS && inI && row == nil && !complete:
			n := base
			n.Details = "no bit check result for this run"
			add = &n
		}
		if add != nil {
			if err := p.cfg.BitLog.Record(ctx, *add); err != nil {
				return rep, fmt.Errorf("bitreport: %w", err)
			}
			add.CheckedAt = bitlog.Truncate(add.CheckedAt)
			row = add
			if missing != nil {
				if err := p.sendMissing(ctx, r, id, missing); err != nil {
					return rep, err
				}
			}
		}
		if inS && inI && ix.v.MissingRun != "" { // found again: a later absence is a first sighting
			if err := p.cfg.Index.SetMissing(ctx, ix.v.Item, ""); err != nil && !errors.Is(err, contentindex.ErrNotFound) {
				return rep, fmt.Errorf("bitreport: %w", err)
			}
		}
		if row != nil && row.Case == 11 && !inS && !inI {
			row = nil // deleted since it was listed: it completed the space, it is not part of it
		}
		if row != nil {
			if _, err := io.WriteString(w, Line(*row)); err != nil {
				return rep, fmt.Errorf("bitreport: %w", err)
			}
			rep.Counts.Add(row.Result)
			seen(*row)
		}
		if inS {
			s = pullS()
		}
		if inI {
			ix = pullI()
		}
		if hasRow {
			l = pullL()
		}
	}
	switch {
	case rep.Counts.Failure > 0:
		rep.Result = bitlog.ResultFailure
	case rep.Counts.Error > 0 || !complete:
		rep.Result = bitlog.ResultError
	default:
		rep.Result = bitlog.ResultSuccess
	}
	return rep, nil
}

// missing decides about an item the content index lists and the storage
// listing lacks. It looks at the item again (bit.Observer): found in
// storage after all, or deleted since (case 11), it is not missing. Still
// missing (case 8) the first time, it is marked in the content index with
// the run (contentindex.Index.SetMissing) and not reported — as the Java
// Mill does, one absence is a reason to look again in the next run, not an
// alarm. Missing again in a later run, it is reported: the returned ERROR
// row (case 8, with the observed I and A) is recorded and a BIT_ERROR sent
// for it (sendMissing), so the bit-error processor repairs it from a good
// copy like any other case 8.
func (p *Processor) missing(ctx context.Context, r task.BitReport, e contentindex.Entry, base bitlog.Row, log *slog.Logger) (*bitlog.Row, *bit.Observation, error) {
	o, err := p.cfg.Observer.Observe(ctx, r.Account, r.StoreID, r.SpaceID, e.ContentID)
	switch {
	case errors.Is(err, storage.ErrInvalidID): // the store refuses the ID: report it as it is
		n := base
		n.Case, n.IndexChecksum = 8, e.Checksum
		n.Details = "listed in the content index but missing from storage; the store refuses its content ID"
		return &n, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("bitreport: look again at %s: %w", e.Item, err)
	}
	if o.Case() != 8 {
		return nil, nil, nil // in storage after all (the listing lagged), or deleted since
	}
	if e.MissingRun == "" || e.MissingRun == r.RunID {
		if e.MissingRun == "" {
			if err := p.cfg.Index.SetMissing(ctx, e.Item, r.RunID); err != nil {
				return nil, nil, fmt.Errorf("bitreport: %w", err)
			}
		}
		log.Info("item missing from storage for the first time; reported and repaired if still missing in the next run",
			"content_id", e.ContentID, "index_checksum", e.Checksum)
		return nil, nil, nil
	}
	o.Details = append(o.Details, "listed in the content index but missing from storage in two consecutive runs (first seen in run "+e.MissingRun+")")
	n := base
	n.Case, n.IndexChecksum, n.AuditChecksum = 8, o.Sums.Index, o.Sums.Audit
	n.Details = strings.Join(append([]string{bit.CaseText(8)}, o.Details...), "; ")
	return &n, o, nil
}

// sendMissing sends the case-8 BIT_ERROR of an item missing in two runs,
// internally resolvable when another store holds a copy with the
// consensus of o (bit.NewBitError).
func (p *Processor) sendMissing(ctx context.Context, r task.BitReport, contentID string, o *bit.Observation) error {
	b := task.Bit{Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID, ContentID: contentID, RunID: r.RunID}
	be, err := bit.NewBitError(ctx, p.cfg.Stores, b, o, 8)
	if err != nil {
		return fmt.Errorf("bitreport: %w", err)
	}
	body, err := task.Encode(be.Task(), p.cfg.Format)
	if err != nil {
		return fmt.Errorf("bitreport: encode BIT_ERROR: %w", err)
	}
	if err := p.cfg.BitErrorQueue.Send(ctx, queue.SendEntry{Body: body}); err != nil {
		return fmt.Errorf("bitreport: send BIT_ERROR to %s: %w", p.cfg.BitErrorQueue.Name(), err)
	}
	return nil
}

// indexIDs iterates over the live index rows of the space.
func (p *Processor) indexIDs(ctx context.Context, r task.BitReport) iter.Seq2[contentindex.Entry, error] {
	return func(yield func(contentindex.Entry, error) bool) {
		after := ""
		for {
			es, more, err := p.cfg.Index.List(ctx, r.Account, r.StoreID, r.SpaceID, after, p.cfg.PageSize)
			if err != nil {
				yield(contentindex.Entry{}, err)
				return
			}
			for _, e := range es {
				if !yield(e, nil) {
					return
				}
			}
			if !more || len(es) == 0 {
				return
			}
			after = es[len(es)-1].ContentID
		}
	}
}

// logRows iterates over the run's bit log rows of the space.
func (p *Processor) logRows(ctx context.Context, r task.BitReport) iter.Seq2[bitlog.Row, error] {
	return func(yield func(bitlog.Row, error) bool) {
		f := bitlog.Filter{RunID: r.RunID, Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID, Limit: p.cfg.PageSize}
		for {
			rows, next, err := p.cfg.BitLog.Results(ctx, f)
			if err != nil {
				yield(bitlog.Row{}, err)
				return
			}
			for _, row := range rows {
				// RunID "" in a filter matches every run: keep this run's rows.
				if row.RunID != r.RunID {
					continue
				}
				if !yield(row, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			f.After = next
		}
	}
}
