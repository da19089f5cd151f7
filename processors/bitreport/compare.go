package bitreport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
)

// MaxProblems is how many problem rows a report's notification lists.
const MaxProblems = 20

// JavaMissingMark, followed by the report's time, marks in the content
// index an item a Java-shaped report (no run) first found missing, as a
// run ID marks it for a run's report: the next Java-shaped report that
// finds it missing reports it.
const JavaMissingMark = "java-report-"

// compare merges the space's storage listing, its live content index rows
// and the run's bit log rows (three listings in byte-wise content ID
// order, one page of each in memory), records ERROR rows for items missing
// from storage or from the index, writes every row to w and counts them.
// It also returns the first MaxProblems rows that are not SUCCESS.
// It counts what the rows' checks did (their methods and bytes) for the
// run's cost.
// A Java-shaped report (java: no run) reads the rows made outside any run
// and makes an ERROR row of every item without one.
func (p *Processor) compare(ctx context.Context, r task.BitReport, kind storage.Kind, prov storage.Provider, complete, java bool, w io.Writer, log *slog.Logger) (rep bitlog.Report, problems []bitlog.Row, usage pricing.Usage, err error) {
	usage.PartSize = p.cfg.ReadPartSize
	rep, err = p.compareRows(ctx, r, kind, prov, complete, java, w, log, func(row bitlog.Row) {
		if row.Result != bitlog.ResultSuccess && len(problems) < MaxProblems {
			problems = append(problems, row)
		}
		usage.Add(row.Method, row.Bytes, row.Archived)
	})
	return rep, problems, usage, err
}

// compareRows is compare, telling seen about every row of the report.
func (p *Processor) compareRows(ctx context.Context, r task.BitReport, kind storage.Kind, prov storage.Provider, complete, java bool, w io.Writer, log *slog.Logger, seen func(bitlog.Row)) (bitlog.Report, error) {
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
	mark := r.RunID // what marks an item missing for the first time
	if java {
		mark = JavaMissingMark + now.UTC().Format("20060102T150405Z")
	}
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
			n, o, err := p.missing(ctx, r, mark, ix.v, base, log)
			if err != nil {
				return rep, err
			}
			add, missing = n, o
		case inS && !inI && (row == nil || row.Result == bitlog.ResultSuccess):
			n := base
			n.Details = "in storage but missing from the content index"
			add = &n
		case inS && inI && row == nil && java:
			n := base
			n.Details = "no bit check result outside a bit producer run (a Java-shaped report counts only those)"
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
	case rep.Counts.Total == 0: // nothing was checked: not a SUCCESS
		rep.Result = bitlog.ResultEmpty
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
func (p *Processor) missing(ctx context.Context, r task.BitReport, mark string, e contentindex.Entry, base bitlog.Row, log *slog.Logger) (*bitlog.Row, *bit.Observation, error) {
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
	if e.MissingRun == "" || e.MissingRun == mark {
		if e.MissingRun == "" {
			if err := p.cfg.Index.SetMissing(ctx, e.Item, mark); err != nil {
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
	if err := p.cfg.BitErrorQueue.Send(ctx, queue.SendEntry{Body: body, Group: queue.GroupFor(r.Account)}); err != nil {
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
