package bit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// Kind is the producer's kind: its lease name and state kind.
const Kind = "bitproducer"

// Opener opens a registered store (*stores.Opener implements it).
type Opener = storage.Opener

// Source is what the bit and statistics producers list spaces from and
// log to, the part of their Configs they share.
type Source struct {
	// Registry lists the accounts and their stores; inactive accounts are
	// skipped.
	Registry *stores.Registry `validate:"required"`
	// Opener opens the stores to list their spaces and content.
	Opener Opener `validate:"required"`
	// Filter selects the spaces (default: every space).
	Filter Filter
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Check adds to p what s lacks and sets its defaults.
func (s *Source) Check(p *validate.Problems) {
	p.Required(s)
	s.Logger = cmp.Or(s.Logger, slog.Default())
}

// Config configures a Producer. Source's Registry and Opener, and BitLog,
// are required.
type Config struct {
	Source
	// BitLog is where the producer records each space of its runs
	// (bitlog.Runs: when it began listing it, how many items it listed),
	// before it queues the space's BIT_REPORT: the report processor makes
	// a report only for a run recorded there, and waits for that many
	// results. SkipRecent reads the reports from it too.
	BitLog BitLog `validate:"required"`
	// SkipRecent, when positive, leaves out of a run every space whose
	// latest bit-integrity report is a SUCCESS made less than SkipRecent
	// before the run started (the Java Mill skips those of the last 60
	// days) and is trusted: it belongs to a run this producer recorded for
	// the space, and it covered every item the producer listed (more than
	// none). The run's summary names each skipped space with the reason.
	SkipRecent time.Duration
	// Coverage, when set, measures the fixity coverage of each space at
	// the start of a run (fixity.Source): the spaces are checked most
	// overdue first (fixity.ByUrgency; ties keep the registry order), and
	// each store's figures are logged ("fixity coverage") for the
	// overdue-copies metric.
	Coverage Coverage
	// SkipCovered, with Coverage, leaves out of a run every space whose
	// every copy is within its fixity target and stays so for
	// CoveredMargin (fixity.Coverage.Covered); set the margin to the run
	// frequency so no copy falls due before the next run. SkipRecent must
	// be 0 with it.
	// Inside a space that is checked, SkipCovered queues only the copies
	// that are due (see due.go): those without a fresh verdict, or whose
	// verdict falls out of target within CoveredMargin; the others are
	// neither given a BIT nor put in an at-rest job.
	SkipCovered   bool
	CoveredMargin time.Duration
	// Verdicts are the latest fresh verdicts SkipCovered reads copy by
	// copy (default BitLog, when it implements bitlog.Verdicts).
	Verdicts bitlog.Verdicts
	// AtRest, when set, routes the archived items of stores whose
	// archived method is compute-checksum to one at-rest checksum job per
	// space and run instead of BIT tasks (see atrest.go).
	AtRest *AtRest
	// Restore, when set, asks for restores of the archived items of
	// stores whose archived method is restore instead of queueing BIT
	// tasks that cannot read them (see restore.go).
	Restore *Restore
}

// BitLog is the part of the bit log the producer uses (bitlog.Log
// implements it): its record of runs, and the reports.
type BitLog interface {
	bitlog.Runs
	Reports(ctx context.Context, f bitlog.ReportFilter) ([]bitlog.Report, error)
}

// Producer is the bit-integrity looping producer: one morsel
// per (account, store, space) of the active accounts that the filter
// selects; each bite queues a BIT task (carrying the run ID) for each of
// the next items of the space's listing, and the bite that finishes the
// listing records the number of items listed in the bit log
// (bitlog.Runs.FinishSpace), then queues one BIT_REPORT carrying the run
// ID (the report processor waits until that many items have a result). Run it with looping.Loop, whose queue must route BIT_REPORT
// tasks to the bit-report queue: see Router.
type Producer struct {
	cfg Config
	log *slog.Logger
}

var _ looping.Producer = (*Producer)(nil)

// New returns a producer.
func New(cfg Config) (*Producer, error) {
	p := validate.Struct("bit producer: Config", cfg)
	cfg.Source.Check(p)
	p.Check(cfg.SkipRecent >= 0, "SkipRecent", cfg.SkipRecent, "not be negative")
	p.Check(cfg.CoveredMargin >= 0, "CoveredMargin", cfg.CoveredMargin, "not be negative")
	// A run with SkipCovered checks only the copies that are due: its
	// SUCCESS speaks of those, not of the space SkipRecent would skip.
	p.Check(!cfg.SkipCovered || cfg.SkipRecent == 0, "SkipRecent", cfg.SkipRecent, "be 0 with SkipCovered, which decides copy by copy")
	if cfg.SkipCovered {
		p.Require("Coverage (for SkipCovered)", cfg.Coverage != nil)
		if vs, ok := cfg.BitLog.(bitlog.Verdicts); ok && cfg.Verdicts == nil {
			cfg.Verdicts = vs
		}
		p.Require("Verdicts (for SkipCovered)", cfg.Verdicts != nil)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if cfg.AtRest != nil {
		if err := cfg.AtRest.validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Restore != nil {
		if err := cfg.Restore.validate(); err != nil {
			return nil, err
		}
	}
	return &Producer{cfg: cfg, log: cfg.Logger}, nil
}

// morselData is the Data of a morsel.
type morselData struct {
	Account string `json:"account"`
	StoreID string `json:"store"`
	SpaceID string `json:"space"`
	// Listed counts the items of the run's sample the morsel's earlier
	// bites queued a BIT for or recorded for an at-rest job (with a sample
	// rate below 1, fewer than the listing held).
	Listed int64 `json:"listed"`
	// AtRest counts those of them recorded for the space's at-rest job.
	AtRest int64 `json:"atRest,omitempty"`
	// Within counts the items SkipCovered left out: within target.
	Within int64 `json:"within,omitempty"`
	// Restores: the restore route's figures (restore.go).
	Restores *restoreTally `json:"restores,omitempty"`
}

// MorselID names the morsel of a space: "account/store/space".
func MorselID(account, storeID, spaceID string) string {
	return account + "/" + storeID + "/" + spaceID
}

// Space is one space of a registered store.
type Space struct{ Account, StoreID, SpaceID string }

// ListSpaces lists the spaces of the active accounts' stores that filter
// selects: accounts in registry order, stores in account order, spaces in
// each store's (byte-wise) order. A store that cannot be opened or listed is
// an error (all of them are reported), so a run never silently covers less.
func ListSpaces(ctx context.Context, reg *stores.Registry, o Opener, filter Filter) ([]Space, error) {
	spaces, failed := ListSpacesEach(ctx, reg, o, filter)
	var errs []error
	for _, f := range failed {
		errs = append(errs, f.Err)
	}
	return spaces, errors.Join(errs...)
}

// StoreFailure is a store ListSpacesEach could not open or list.
type StoreFailure struct {
	Account, StoreID string
	Err              error
}

// ListSpacesEach is ListSpaces that lists every store it can: the stores
// that cannot be opened or listed are returned apart, and their spaces are
// missing from the list.
func ListSpacesEach(ctx context.Context, reg *stores.Registry, o Opener, filter Filter) ([]Space, []StoreFailure) {
	var out []Space
	var failed []StoreFailure
	for _, a := range reg.ActiveAccounts() {
		for _, s := range a.Stores {
			if !filter.Store(a.ID, s.ID) {
				continue
			}
			prov, err := o.Open(ctx, a.ID, s.ID)
			if err != nil {
				failed = append(failed, StoreFailure{a.ID, s.ID, err})
				continue
			}
			spaces, err := prov.ListSpaces(ctx)
			if err != nil {
				failed = append(failed, StoreFailure{a.ID, s.ID, fmt.Errorf("list spaces of store %q of account %q: %w", s.ID, a.ID, err)})
				continue
			}
			for _, sp := range spaces {
				if filter.Space(a.ID, s.ID, sp) {
					out = append(out, Space{Account: a.ID, StoreID: s.ID, SpaceID: sp})
				}
			}
		}
	}
	return out, failed
}

// Morsels lists the spaces to check (ListSpacesEach). A store that cannot
// be opened or listed is a failed morsel of the run ("account/store/(store)",
// looping.Morsel.Failed): the summary, the notification and the exit status
// report it, every other store is checked, and the next run tries it again.
// When no store at all can be listed the run's start fails instead (the
// next invocation tries again): a sweep that lists nothing is not a sweep.
// With SkipRecent, a space whose latest report is a recent SUCCESS is a
// skipped morsel. With Coverage, the spaces come most overdue first, and
// with SkipCovered a space whose every copy stays within target is a
// skipped morsel.
func (p *Producer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	spaces, failed := ListSpacesEach(ctx, p.cfg.Registry, p.cfg.Opener, p.cfg.Filter)
	if len(failed) > 0 && len(spaces) == 0 {
		var errs []error
		for _, f := range failed {
			errs = append(errs, f.Err)
		}
		return nil, fmt.Errorf("bit: no store could be listed: %w", errors.Join(errs...))
	}
	out := make([]looping.Morsel, 0, len(spaces)+len(failed))
	for _, f := range failed {
		out = append(out, looping.Morsel{ID: f.Account + "/" + f.StoreID + "/(store)", Failed: f.Err.Error()})
	}
	covs, err := p.coverage(ctx, spaces)
	if err != nil {
		return nil, err
	}
	for i, sp := range spaces {
		data, err := json.Marshal(morselData{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID})
		if err != nil {
			return nil, err
		}
		m := looping.Morsel{ID: MorselID(sp.Account, sp.StoreID, sp.SpaceID), Data: data}
		if m.Skipped, err = p.recent(ctx, sp, run.Start); err != nil {
			return nil, err
		}
		if m.Skipped == "" && covs != nil {
			m.Skipped = p.covered(covs[i])
		}
		out = append(out, m)
	}
	return out, nil
}

// recent returns why sp is skipped, or "": its latest report is a SUCCESS
// made less than SkipRecent before start, of a run this producer recorded
// for the space (bitlog.Runs), covering every item the producer listed in
// it, and more than none. Any other report — of a run the producer did
// not record (a report made before the record existed), of a listing
// that never finished, counting fewer items than were listed, or of an
// empty space — leaves the space to be checked.
func (p *Producer) recent(ctx context.Context, sp Space, start time.Time) (string, error) {
	if p.cfg.SkipRecent <= 0 {
		return "", nil
	}
	if p.target(sp.Account, sp.StoreID).SampleRate < 1 {
		return "", nil // a run of a sampled store never checked the whole space
	}
	reps, err := p.cfg.BitLog.Reports(ctx, bitlog.ReportFilter{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID, Limit: 1})
	if err != nil {
		return "", fmt.Errorf("bit: latest report of %s/%s/%s: %w", sp.Account, sp.StoreID, sp.SpaceID, err)
	}
	if len(reps) == 0 || reps[0].Result != bitlog.ResultSuccess {
		return "", nil
	}
	rep := reps[0]
	age := start.Sub(rep.CreatedAt)
	if age >= p.cfg.SkipRecent {
		return "", nil
	}
	rec, err := p.cfg.BitLog.RunSpace(ctx, rep.RunID, sp.Account, sp.StoreID, sp.SpaceID)
	if errors.Is(err, bitlog.ErrNoRun) {
		p.log.Debug("latest SUCCESS report not trusted: its run was not recorded by the producer; checking the space",
			"account", sp.Account, "store_id", sp.StoreID, "space_id", sp.SpaceID, "run_id", rep.RunID)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bit: run of the latest report of %s/%s/%s: %w", sp.Account, sp.StoreID, sp.SpaceID, err)
	}
	if !rec.Done() || rec.Expected <= 0 || rep.Counts.Total != rec.Expected {
		p.log.Debug("latest SUCCESS report not trusted: it did not cover every item the producer listed; checking the space",
			"account", sp.Account, "store_id", sp.StoreID, "space_id", sp.SpaceID, "run_id", rep.RunID,
			"reported", rep.Counts.Total, "listed", rec.Expected, "listing_done", rec.Done())
		return "", nil
	}
	return fmt.Sprintf("the latest report (run %s, SUCCESS, %d of %d listed items, %s) is %s old, under the skip age of %s",
		rep.RunID, rep.Counts.Total, rec.Expected, rep.CreatedAt.UTC().Format(time.RFC3339), FormatAge(max(age, 0)), FormatAge(p.cfg.SkipRecent)), nil
}

// ParseAge reads an age: "Nd" (days) or a Go duration ("36h", "90m").
func ParseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("bit: age %q: want a number of days (e.g. 60d) or a duration (e.g. 36h)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bit: age %q: want a number of days (e.g. 60d) or a duration (e.g. 36h)", s)
	}
	return d, nil
}

// FormatAge writes an age in days when it is a whole number of them
// ("60d"), else as a duration rounded to the minute.
func FormatAge(d time.Duration) string {
	day := 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.Itoa(int(d/day)) + "d"
	}
	if d >= day {
		return fmt.Sprintf("%.1fd", float64(d)/float64(day))
	}
	return d.Round(time.Minute).String()
}

// Bite queues BIT tasks for up to max items after m.Marker, and the
// space's BIT_REPORT when the listing ends. It records the space in the
// run (bitlog.Runs) on its first bite, and the number of items listed on
// its last, before the BIT_REPORT is queued.
func (p *Producer) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	var d morselData
	if err := json.Unmarshal(m.Data, &d); err != nil || d.Account == "" || d.StoreID == "" || d.SpaceID == "" {
		return looping.BiteResult{}, fmt.Errorf("bit: morsel %q: bad data %s", m.ID, m.Data)
	}
	prov, err := p.cfg.Opener.Open(ctx, d.Account, d.StoreID)
	if err != nil {
		return looping.BiteResult{}, err
	}
	rs := bitlog.RunSpace{RunID: run.ID, Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID}
	if m.Marker == "" && d.Listed == 0 { // the space's first bite
		if err := p.cfg.BitLog.StartSpace(ctx, rs); err != nil {
			return looping.BiteResult{}, fmt.Errorf("bit: record the run: %w", err)
		}
	}
	lister, loc, atRest := p.atRestRoute(d.Account, d.StoreID, prov)
	rl, restorer := p.restoreRoute(d.Account, d.StoreID, prov)
	if rl != nil {
		lister = rl
	}
	var es []storage.Entry
	var ids []string
	var archived []bitlog.AtRestObject
	atRestIDs := map[string]bool{}
	var more bool
	if atRest || rl != nil {
		es, more, err = lister.ListEntries(ctx, d.SpaceID, m.Marker, max)
		for _, e := range es {
			ids = append(ids, e.ID)
			if atRest && ArchivedClass(e.StorageClass) {
				archived = append(archived, bitlog.AtRestObject{ContentID: e.ID, Size: e.Size, StorageClass: e.StorageClass})
				atRestIDs[e.ID] = true
			}
		}
	} else {
		ids, more, err = prov.ListContent(ctx, d.SpaceID, m.Marker, max)
	}
	if errors.Is(err, storage.ErrNotFound) {
		// The space was deleted since the run started: nothing left to
		// check, and nothing to report on.
		p.log.Warn("space vanished during the run; no report for it", "account", d.Account,
			"store_id", d.StoreID, "space_id", d.SpaceID, "listed", d.Listed)
		return looping.BiteResult{Marker: m.Marker, Done: true}, nil
	}
	if err != nil {
		return looping.BiteResult{}, err
	}
	if more && len(ids) == 0 {
		return looping.BiteResult{}, fmt.Errorf("bit: store %q of account %q: listing of %q after %q said more but returned nothing",
			d.StoreID, d.Account, d.SpaceID, m.Marker)
	}
	// The store's sample rate: a run checks that share of its items
	// (fixity.Sampled, the same choice if this bite is sent again), by a
	// BIT task or at rest; the record and the report count them.
	// With SkipCovered, only the copies that are due (due.go).
	rate := p.target(d.Account, d.StoreID).SampleRate
	sp := fixity.Space{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID}
	due, within, err := p.filterDue(ctx, p.dueFilter(d, run.Start, m.Marker, len(ids)), m.Marker, ids)
	if err != nil {
		return looping.BiteResult{}, err
	}
	d.Within += within
	inRun := func(id string) bool { return (due == nil || due[id]) && fixity.Sampled(run.ID, sp, id, rate) }
	archived = slices.DeleteFunc(archived, func(o bitlog.AtRestObject) bool { return !inRun(o.ContentID) })
	held, err := p.holdArchived(ctx, &d, prov, restorer, es, inRun) // no BIT: a restore asked for
	if err != nil {
		return looping.BiteResult{}, err
	}
	key := bitlog.AtRestKey{RunID: run.ID, Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID}
	if len(archived) > 0 {
		// Recorded before the marker moves: a repeated bite records them again.
		if err := p.recordArchived(ctx, key, archived); err != nil {
			return looping.BiteResult{}, err
		}
		d.AtRest += int64(len(archived))
	}
	tasks := make([]*task.Task, 0, len(ids)+1)
	for _, id := range ids {
		if !inRun(id) || atRestIDs[id] || held[id] {
			continue // within target, not in this run's sample, checked at rest, or being restored
		}
		tasks = append(tasks, task.Bit{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID, ContentID: id, RunID: run.ID}.Task())
	}
	d.Listed += int64(len(tasks) + len(archived))
	if !more {
		if d.AtRest > 0 {
			// The job before the count: the report waits for its items.
			if err := p.submit(ctx, key, loc); err != nil {
				return looping.BiteResult{}, err
			}
		}
		// The record first: the report processor refuses a report of a
		// space whose listing the producer did not record as finished.
		rs.Expected = d.Listed
		if err := p.cfg.BitLog.FinishSpace(ctx, rs); err != nil {
			return looping.BiteResult{}, fmt.Errorf("bit: record the run: %w", err)
		}
		if d.Within > 0 {
			p.log.Info("copies within target left out", "account", d.Account, "store_id", d.StoreID,
				"space_id", d.SpaceID, "within", d.Within, "queued", d.Listed, "run_id", run.ID)
		}
		p.logRestores(d, run.ID)
		expected := d.Listed // a hint only: the processor reads the record
		tasks = append(tasks, task.BitReport{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID, RunID: run.ID, Expected: &expected}.Task())
	}
	// BITs first, the report last: the framework sends in emit order.
	if err := emit(ctx, tasks...); err != nil {
		return looping.BiteResult{}, err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return looping.BiteResult{}, err
	}
	marker := m.Marker
	if len(ids) > 0 {
		marker = ids[len(ids)-1]
	}
	return looping.BiteResult{Marker: marker, Done: !more, Data: data}, nil
}

// Spaces returns the IDs of the morsels' spaces as account/store/space,
// sorted (for logs and tests).
func Spaces(ms []looping.Morsel) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.ID)
	}
	slices.Sort(out)
	return out
}
