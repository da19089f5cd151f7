package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/tsv"
	"github.com/millfleet/mill/producers/bit"
)

const fixityCoverageUsage = `Show fixity coverage: for each space of the active accounts' stores (those
--account and --store select), how many copies (live rows of the content
index) have a fresh verdict within the store's fixity target, how many are
overdue (an old verdict, or none: NEVER) or not covered (archived on a store
whose archived method is none), the age of the oldest verdict, and the share
of the copies whose verdict was read and hashed (READ) or computed at rest
(AT-REST); then the store's total. A fresh verdict is one Mill's processors
recorded from the bytes they observed (docs/ARCHITECTURE.md, Bit integrity).
The spaces are those the stores list, as the bit producer sees them.

Exit status 1 when a store could not be listed (the others are shown).

Examples:
  millctl fixity coverage
  millctl fixity coverage --account acme --store 1 --json
  millctl fixity coverage --prometheus > /var/lib/node_exporter/mill_fixity.prom`

// fixityCoverageOptions are the options of fixity coverage.
type fixityCoverageOptions struct {
	configOptions
	dbURL            string
	account, store   string
	json, prometheus bool
}

func (o *fixityCoverageOptions) define(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &o.dbURL)
	fs.StringVar(&o.account, "account", "", "only this `account`")
	fs.StringVar(&o.store, "store", "", "only this store `id`")
	fs.BoolVar(&o.json, "json", false, "print JSON, one object per line (each space, then its store's total), instead of a table")
	fs.BoolVar(&o.prometheus, "prometheus", false, "print each store's figures as Prometheus gauges (text format, for a textfile collector)")
}

func (o *fixityCoverageOptions) run(ctx context.Context, a *app, args []string) error {
	if o.json && o.prometheus {
		return usagef("--json and --prometheus: choose one")
	}
	if o.store != "" && o.account == "" {
		return usagef("--store needs --account")
	}
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		reg, err := o.src.registry(ctx)
		if err != nil {
			return printFileErrors(a, err)
		}
		if o.account != "" && reg.Account(o.account) == nil {
			return fmt.Errorf("%w %q", stores.ErrUnknownAccount, o.account)
		}
		if o.store != "" {
			if _, err := reg.Store(o.account, o.store); err != nil {
				return err
			}
		}
		list, failed, err := listSpaces(ctx, a, reg, o.selected(reg))
		if err != nil {
			return err
		}
		src := fixity.Source{Index: pgcontentindex.New(db.Pool), Verdicts: pgbitlog.New(db.Pool)}
		covs, err := src.Spaces(ctx, list, func(account, storeID string) stores.Fixity {
			s, err := reg.Store(account, storeID)
			if err != nil {
				return stores.Store{}.FixityTarget()
			}
			return fixity.StoreTarget(*s)
		})
		if err != nil {
			return err
		}
		switch {
		case o.json:
			err = printCoverageJSON(a.stdout, covs)
		case o.prometheus:
			err = printCoveragePrometheus(a.stdout, fixity.Totals(covs))
		default:
			err = printCoverage(a.stdout, covs)
		}
		if err != nil {
			return err
		}
		var errs []error
		for _, f := range failed {
			fmt.Fprintf(a.stderr, "%s/%s: not listed: %v\n", f.Account, f.StoreID, f.Err)
			errs = append(errs, f.Err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d stores could not be listed: %w", len(errs), errors.Join(errs...))
		}
		return nil
	})
}

// selected returns the part of reg that --account and --store select.
func (o *fixityCoverageOptions) selected(reg *stores.Registry) *stores.Registry {
	if o.account == "" {
		return reg
	}
	out := &stores.Registry{}
	for _, acct := range reg.Accounts {
		if acct.ID != o.account {
			continue
		}
		if o.store != "" {
			var only []stores.Store
			for _, s := range acct.Stores {
				if s.ID == o.store {
					only = append(only, s)
				}
			}
			acct.Stores = only
		}
		out.Accounts = append(out.Accounts, acct)
	}
	return out
}

// listSpaces lists the spaces of the selected part of reg's stores, as
// the bit producer sees them; the stores that could not be listed are
// returned apart.
func listSpaces(ctx context.Context, a *app, reg, selected *stores.Registry) ([]fixity.Space, []bit.StoreFailure, error) {
	var base *aws.Config
	pathStyle := false
	if hasS3Store(selected) {
		cfg, err := a.awsConfig(ctx)
		if err != nil {
			return nil, nil, err
		}
		base, pathStyle = &cfg.AWS, cfg.EndpointOverride
	}
	spaces, failed := bit.ListSpacesEach(ctx, selected, wiring.NewOpener(reg, base, pathStyle), bit.Filter{})
	list := make([]fixity.Space, 0, len(spaces))
	for _, sp := range spaces {
		list = append(list, fixity.Space{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID})
	}
	return list, failed, nil
}

func hasS3Store(reg *stores.Registry) bool {
	for _, acct := range reg.Accounts {
		for _, s := range acct.Stores {
			if s.Kind == storage.KindS3 {
				return true
			}
		}
	}
	return false
}

// formatDays writes an age in whole days when it is one or more ("100d"),
// else rounded to the minute; "-" for none.
func formatDays(d time.Duration, known bool) string {
	if !known {
		return "-"
	}
	if d >= 24*time.Hour {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.Round(time.Minute).String()
}

// percent writes n of c's copies as "n (p%)".
func percent(c fixity.Coverage, n int64) string {
	return fmt.Sprintf("%d (%.1f%%)", n, 100*c.Share(n))
}

// printCoverage prints a table: each store's spaces, then the store's
// total (SPACE "(total)"), and the whole selection's last.
func printCoverage(w io.Writer, covs []fixity.Coverage) error {
	if len(covs) == 0 {
		_, err := fmt.Fprintln(w, "no space selected (no active account, or no store lists a space)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tSTORE\tSPACE\tCOPIES\tWITHIN TARGET\tOVERDUE\tNEVER\tNOT COVERED\tOLDEST\tREAD\tAT-REST\tTARGET\t")
	row := func(c fixity.Coverage, space string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%.1f%%\t%.1f%%\t%s\t\n", bitlogCell(c.Account), bitlogCell(c.StoreID), space,
			c.Copies, percent(c, c.Within), c.Overdue, c.NeverVerified, c.NotCovered, formatDays(c.OldestAge(), !c.Oldest.IsZero()),
			100*c.Share(c.Read), 100*c.Share(c.AtRest), targetCell(c.Target))
	}
	totals := fixity.Totals(covs)
	var all fixity.Coverage
	for _, t := range totals {
		for _, c := range covs {
			if c.Account == t.Account && c.StoreID == t.StoreID {
				row(c, bitlogCell(c.SpaceID))
			}
		}
		row(t, "(total)")
		all = sumAll(all, t)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "all: %d copies in %d spaces, %s within target, %d overdue (%d never verified), %d not covered; oldest verdict %s\n",
		all.Copies, all.Spaces, percent(all, all.Within), all.Overdue, all.NeverVerified, all.NotCovered, formatDays(all.OldestAge(), !all.Oldest.IsZero()))
	return err
}

// sumAll adds a store's total to the selection's.
func sumAll(all, t fixity.Coverage) fixity.Coverage {
	t.Account, t.StoreID = "", ""
	return fixity.Totals([]fixity.Coverage{all, t})[0]
}

// targetCell writes a store's target (stores.Fixity.String).
func targetCell(f stores.Fixity) string { return tsv.Cell(f.String()) }

// coverageJSON is a line of `fixity coverage --json`.
type coverageJSON struct {
	Level            string     `json:"level"` // "space" or "store"
	Account          string     `json:"account"`
	StoreID          string     `json:"store_id"`
	SpaceID          string     `json:"space_id,omitempty"`
	Spaces           int64      `json:"spaces"`
	Copies           int64      `json:"copies"`
	Within           int64      `json:"within_target"`
	Overdue          int64      `json:"overdue"`
	NeverVerified    int64      `json:"never_verified"`
	NotCovered       int64      `json:"not_covered"`
	Failed           int64      `json:"failed"`
	Read             int64      `json:"read"`
	AtRest           int64      `json:"at_rest"`
	ShareWithin      float64    `json:"share_within_target"`
	ShareRead        float64    `json:"share_read"`
	ShareAtRest      float64    `json:"share_at_rest"`
	OldestVerdict    *time.Time `json:"oldest_verdict"`
	OldestAgeSeconds int64      `json:"oldest_age_seconds"`
	IntervalSeconds  int64      `json:"interval_seconds"`
	ArchivedSeconds  int64      `json:"archived_interval_seconds"`
	ArchivedMethod   string     `json:"archived_method,omitempty"`
	SampleRate       float64    `json:"sample_rate"`
	MeasuredAt       time.Time  `json:"measured_at"`
}

func toJSON(c fixity.Coverage) coverageJSON {
	j := coverageJSON{Level: "space", Account: c.Account, StoreID: c.StoreID, SpaceID: c.SpaceID, Spaces: c.Spaces,
		Copies: c.Copies, Within: c.Within, Overdue: c.Overdue, NeverVerified: c.NeverVerified, NotCovered: c.NotCovered,
		Failed: c.Failed, Read: c.Read, AtRest: c.AtRest, ShareWithin: c.Share(c.Within), ShareRead: c.Share(c.Read),
		ShareAtRest: c.Share(c.AtRest), OldestAgeSeconds: int64(c.OldestAge().Seconds()),
		IntervalSeconds: int64(c.Target.Interval.Seconds()), ArchivedSeconds: int64(c.Target.ArchivedInterval.Seconds()),
		ArchivedMethod: string(c.Target.ArchivedMethod), SampleRate: c.Target.SampleRate, MeasuredAt: c.At.UTC()}
	if c.SpaceID == "" {
		j.Level = "store"
	}
	if !c.Oldest.IsZero() {
		t := c.Oldest.UTC()
		j.OldestVerdict = &t
	}
	return j
}

// printCoverageJSON prints each space, then its store's total.
func printCoverageJSON(w io.Writer, covs []fixity.Coverage) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, t := range fixity.Totals(covs) {
		for _, c := range covs {
			if c.Account == t.Account && c.StoreID == t.StoreID {
				if err := enc.Encode(toJSON(c)); err != nil {
					return err
				}
			}
		}
		if err := enc.Encode(toJSON(t)); err != nil {
			return err
		}
	}
	return nil
}

// printCoveragePrometheus prints each store's figures as gauges in the
// Prometheus text format.
func printCoveragePrometheus(w io.Writer, totals []fixity.Coverage) error {
	var b strings.Builder
	for _, g := range []struct {
		name, help string
		value      func(fixity.Coverage) float64
	}{
		{"mill_fixity_copies", "Copies (live content-index rows) of the store.", func(c fixity.Coverage) float64 { return float64(c.Copies) }},
		{"mill_fixity_copies_within_target", "Copies whose latest fresh verdict is within the store's fixity target.", func(c fixity.Coverage) float64 { return float64(c.Within) }},
		{"mill_fixity_copies_overdue", "Copies whose latest fresh verdict is older than the target, or that have none.", func(c fixity.Coverage) float64 { return float64(c.Overdue) }},
		{"mill_fixity_copies_never_verified", "Copies without a fresh verdict.", func(c fixity.Coverage) float64 { return float64(c.NeverVerified) }},
		{"mill_fixity_copies_not_covered", "Archived copies of a store whose archived method is none.", func(c fixity.Coverage) float64 { return float64(c.NotCovered) }},
		{"mill_fixity_oldest_verdict_age_seconds", "Age of the store's oldest latest verdict (0: none).", func(c fixity.Coverage) float64 { return c.OldestAge().Seconds() }},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", g.name, g.help, g.name)
		for _, c := range totals {
			fmt.Fprintf(&b, "%s{account=%s,store=%s} %s\n", g.name, promLabel(c.Account), promLabel(c.StoreID),
				strconv.FormatFloat(g.value(c), 'f', -1, 64))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// promLabel quotes a label value as the text format escapes it.
func promLabel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
