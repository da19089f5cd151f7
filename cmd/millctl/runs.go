package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/internal/cli/progress"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/task"
)

const runsUsage = `Without ID, list the latest producer runs with their counts: tasks queued,
done, failed (retrying), dead-lettered, left, rate and ETA. With ID, show that
run (of every producer that has one, or of --producer) with a progress bar
and its AWS requests counted so far, priced at the default price table;
--watch redraws it every --interval until the run completes.
Example: millctl runs 20260501T030000Z --producer dupproducer --watch`

// runsOptions are the options of runs.
type runsOptions struct {
	dbURL    string
	producer string
	limit    int
	json     bool
	watch    bool
	interval time.Duration
}

func (o *runsOptions) define(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &o.dbURL)
	fs.StringVar(&o.producer, "producer", "", "only this `producer`: dupproducer, bitproducer or statsproducer")
	fs.IntVar(&o.limit, "limit", 20, "list at most this many `runs`")
	fs.BoolVar(&o.json, "json", false, "print JSON, one object per line")
	fs.BoolVar(&o.watch, "watch", false, "with ID: redraw the run's progress until it completes")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "time between redraws of --watch")
}

var producers = []string{runs.ProducerDup, runs.ProducerBit, runs.ProducerStats}

func (o *runsOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 1 {
		return usagef("at most one run ID, got %d arguments", len(args))
	}
	if o.limit < 1 || o.interval <= 0 {
		return usagef("--limit must be at least 1 and --interval positive")
	}
	if o.producer != "" && runs.ProducerOf(producerType[o.producer]) != o.producer {
		return usagef("--producer %q: want dupproducer, bitproducer or statsproducer", o.producer)
	}
	if o.watch && len(args) == 0 {
		return usagef("--watch needs a run ID")
	}
	return withDB(ctx, o.dbURL, nil, func(db *milldb.DB) error {
		s := pgruns.New(db.Pool)
		if len(args) == 0 {
			return o.list(ctx, a, s)
		}
		return o.show(ctx, a, s, args[0])
	})
}

// producerType maps a producer to a task type its runs count.
var producerType = map[string]task.Type{runs.ProducerDup: task.TypeDup, runs.ProducerBit: task.TypeBit, runs.ProducerStats: task.TypeStorageStats}

// runJSON is a run as --json prints it.
type runJSON struct {
	runs.Status
	Left float64 `json:"left"`
	Rate float64 `json:"tasks_per_second"`
	ETA  string  `json:"eta,omitempty"`
	// Cost is what the run's counted requests cost so far, at the default
	// prices (a run's view only; runs.CountedCost).
	Cost *pricing.RequestsEstimate `json:"cost,omitempty"`
}

func asJSON(st runs.Status, now time.Time) runJSON {
	j := runJSON{Status: st, Left: float64(st.Left()), Rate: st.Rate(now)}
	if d, ok := st.ETA(now); ok {
		j.ETA = d.Round(time.Second).String()
	}
	return j
}

func (o *runsOptions) list(ctx context.Context, a *app, s runs.Store) error {
	all, err := s.List(ctx, o.limit)
	if err != nil {
		return err
	}
	now := time.Now()
	if o.json {
		enc := json.NewEncoder(a.stdout)
		for _, st := range all {
			if o.producer == "" || st.Producer == o.producer {
				if err := enc.Encode(asJSON(st, now)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PRODUCER\tRUN\tSTARTED\tSTATE\tQUEUED\tDONE\tFAILED\tDEAD\tLEFT\tRATE\tETA")
	for _, st := range all {
		if o.producer != "" && st.Producer != o.producer {
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f/s\t%s\n", st.Producer, st.ID, st.Started.Format(time.RFC3339),
			state(st), st.Enqueued, st.Done, st.Failed, st.Dead, st.Left(), st.Rate(now), eta(st, now))
	}
	return w.Flush()
}

func state(st runs.Status) string {
	switch {
	case !st.Completed.IsZero():
		return "completed"
	case st.Listed.IsZero():
		return "queueing"
	}
	return "running"
}

func eta(st runs.Status, now time.Time) string {
	if d, ok := st.ETA(now); ok {
		return d.Round(time.Second).String()
	}
	return "-"
}

// show prints the run id of each producer that has one (or of
// --producer); with --watch, redraws until they are all completed.
func (o *runsOptions) show(ctx context.Context, a *app, s runs.Store, id string) error {
	if err := runs.CheckID(id); err != nil {
		return usagef("run ID: %v", err)
	}
	ps := producers
	if o.producer != "" {
		ps = []string{o.producer}
	}
	var found []runs.Status
	for _, p := range ps {
		st, err := s.Get(ctx, p, id)
		if errors.Is(err, runs.ErrNoRun) {
			continue
		}
		if err != nil {
			return err
		}
		found = append(found, st)
	}
	if len(found) == 0 {
		return fmt.Errorf("no run %s recorded", id)
	}
	if o.json {
		enc := json.NewEncoder(a.stdout)
		for _, st := range found {
			j := asJSON(st, time.Now())
			var err error
			if j.Cost, err = cost(ctx, s, st); err != nil {
				return err
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		return nil
	}
	for _, st := range found {
		header(a.stdout, st)
		if err := o.follow(ctx, a.stdout, s, st); err != nil {
			return err
		}
		c, err := cost(ctx, s, st)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "requests counted: %s; cost $%.6f at the default prices of %s (the report prices with Workman's table)\n",
			runs.CountSummary(c.Requests), c.Total, c.TakenOn)
	}
	return nil
}

// cost is the run's counted cost so far at the default prices.
func cost(ctx context.Context, s runs.Store, st runs.Status) (*pricing.RequestsEstimate, error) {
	reqs, err := s.Requests(ctx, st.Producer, st.ID)
	if err != nil {
		return nil, err
	}
	attempts, err := s.Attempts(ctx, st.Producer, st.ID)
	if err != nil {
		return nil, err
	}
	return runs.CountedCost(reqs, attempts, nil), nil
}

func header(w io.Writer, st runs.Status) {
	fmt.Fprintf(w, "%s run %s (%s), started %s\n", st.Producer, st.ID, st.Scope, st.Started.Format(time.RFC3339))
}

// bar is the run's progress line: tasks with a final outcome of those
// queued, the counts, the rate and the ETA.
func bar(st runs.Status, now time.Time) string {
	extra := fmt.Sprintf("done %d  failed %d  dead-lettered %d  left %d  %.1f/s  ETA %s", st.Done, st.Failed, st.Dead, st.Left(), st.Rate(now), eta(st, now))
	if st.Listed.IsZero() {
		extra += "  (still queueing)"
	}
	return progress.Line(state(st), st.Settled(), st.Enqueued, extra)
}

// follow draws st's bar; with --watch, redraws it (carriage return) until
// the run completes or ctx ends.
func (o *runsOptions) follow(ctx context.Context, w io.Writer, s runs.Store, st runs.Status) error {
	if !o.watch || !st.Completed.IsZero() {
		fmt.Fprintln(w, bar(st, time.Now()))
		done(w, st)
		return nil
	}
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		fmt.Fprint(w, "\r"+bar(st, time.Now()))
		if !st.Completed.IsZero() {
			fmt.Fprintln(w)
			done(w, st)
			return nil
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(w)
			return ctx.Err()
		case <-t.C:
		}
		next, err := s.Get(ctx, st.Producer, st.ID)
		if err != nil {
			return err
		}
		st = next
	}
}

func done(w io.Writer, st runs.Status) {
	if !st.Completed.IsZero() {
		fmt.Fprintf(w, "completed %s; report %s\n", st.Completed.Format(time.RFC3339), st.Report)
	}
}
