package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
)

const statsUsage = `Show the storage statistics statsproducer and the STORAGE_STATS processor
record (the space_stats table): what each space held when Mill last counted it,
summed --by account, store or space (the default), for the spaces --account,
--store and --space select; or, with --history, the totals of that selection
in each statistics run, the latest first (a run still in progress shows the
spaces it has counted so far).

Examples:
  millctl stats --by account
  millctl stats --account acme --by store
  millctl stats --account acme --store 1 --space photos --history --since 2026-01-01
  millctl stats --account acme --history --json`

// statsOptions are the options of stats.
type statsOptions struct {
	dbScope
	by, since     string
	history, json bool
	limit         int
}

func (o *statsOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.by, "by", string(spacestats.BySpace), "sum the latest counts per `level`: account, store or space")
	fs.BoolVar(&o.history, "history", false, "show the selection's totals per statistics run instead")
	fs.StringVar(&o.since, "since", "", "with --history: only runs measured on or after this `date` (2006-01-02 or RFC 3339)")
	fs.IntVar(&o.limit, "limit", spacestats.DefaultHistory, "with --history: at most this many `runs`")
	fs.BoolVar(&o.json, "json", false, "print JSON, one object per line, instead of a table")
}

func (o *statsOptions) run(ctx context.Context, a *app, args []string) error {
	level, err := spacestats.ParseLevel(o.by)
	if err != nil {
		return usagef("--by %q: want account, store or space", o.by)
	}
	var from time.Time
	if o.since != "" {
		if from, err = parseSince(o.since); err != nil {
			return usagef("--since %q: want 2006-01-02 or an RFC 3339 time", o.since)
		}
	}
	if o.limit < 1 || o.limit > spacestats.MaxHistory {
		return usagef("--limit %d: want 1 to %d", o.limit, spacestats.MaxHistory)
	}
	f := spacestats.Filter{Account: o.account, StoreID: o.store, SpaceID: o.space}
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		st := pgspacestats.New(db.Pool)
		if o.history {
			ts, err := st.History(ctx, f, from, o.limit)
			if err != nil {
				return err
			}
			return printHistory(a, ts, o.json)
		}
		rows, err := st.Latest(ctx, f)
		if err != nil {
			return err
		}
		return printLatest(a, spacestats.Groups(rows, level), level, o.json)
	})
}

func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// statsJSON is a line of `millctl stats --json`.
type statsJSON struct {
	Account  string    `json:"account"`
	StoreID  string    `json:"store_id,omitempty"`
	SpaceID  string    `json:"space_id,omitempty"`
	Spaces   int64     `json:"spaces"`
	Items    int64     `json:"items"`
	Bytes    int64     `json:"bytes"`
	RunID    string    `json:"run_id"`
	Measured time.Time `json:"measured_at"`
}

func printLatest(a *app, gs []spacestats.Group, level spacestats.Level, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		for _, g := range gs {
			if err := enc.Encode(statsJSON{g.Account, g.StoreID, g.SpaceID, g.Spaces, g.Items, g.Bytes, g.RunID, g.Measured.UTC()}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(gs) == 0 {
		fmt.Fprintln(a.stdout, "no statistics recorded for this selection (run statsproducer, and Workman for STORAGE_STATS)")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	head := map[spacestats.Level]string{
		spacestats.ByAccount: "ACCOUNT\tSPACES\tITEMS\tBYTES\tSIZE\tLAST COUNTED\t",
		spacestats.ByStore:   "ACCOUNT\tSTORE\tSPACES\tITEMS\tBYTES\tSIZE\tLAST COUNTED\t",
		spacestats.BySpace:   "ACCOUNT\tSTORE\tSPACE\tITEMS\tBYTES\tSIZE\tCOUNTED\tRUN\t",
	}[level]
	fmt.Fprintln(tw, head)
	var total spacestats.Group
	for _, g := range gs {
		when := g.Measured.UTC().Format(time.RFC3339)
		size := spacestats.FormatBytes(g.Bytes)
		switch level {
		case spacestats.ByAccount:
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t\n", g.Account, g.Spaces, g.Items, g.Bytes, size, when)
		case spacestats.ByStore:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", g.Account, g.StoreID, g.Spaces, g.Items, g.Bytes, size, when)
		default:
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", g.Account, g.StoreID, g.SpaceID, g.Items, g.Bytes, size, when, g.RunID)
		}
		total.Spaces += g.Spaces
		total.Items += g.Items
		total.Bytes += g.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "total: %d spaces, %d items, %d bytes (%s)\n", total.Spaces, total.Items, total.Bytes, spacestats.FormatBytes(total.Bytes))
	return err
}

// historyJSON is a line of `millctl stats --history --json`.
type historyJSON struct {
	RunID    string    `json:"run_id"`
	Spaces   int64     `json:"spaces"`
	Items    int64     `json:"items"`
	Bytes    int64     `json:"bytes"`
	Started  time.Time `json:"started_at"`
	Measured time.Time `json:"measured_at"`
}

func printHistory(a *app, ts []spacestats.Total, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		for _, t := range ts {
			if err := enc.Encode(historyJSON{t.RunID, t.Spaces, t.Items, t.Bytes, t.Started.UTC(), t.Measured.UTC()}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ts) == 0 {
		fmt.Fprintln(a.stdout, "no statistics runs for this selection")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCOUNTED\tSPACES\tITEMS\tBYTES\tSIZE\t")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t\n", t.RunID, t.Measured.UTC().Format(time.RFC3339), t.Spaces, t.Items, t.Bytes, spacestats.FormatBytes(t.Bytes))
	}
	return tw.Flush()
}
