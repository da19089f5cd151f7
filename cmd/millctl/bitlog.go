package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/tsv"
)

// bitlogFilter is the flag group of bitlog results and bitlog reports.
type bitlogFilter struct {
	dbScope
	run   string
	limit int
	json  bool
}

func (f *bitlogFilter) defineGroup(fs *flag.FlagSet, a *app) {
	f.dbScope.defineGroup(fs, a)
	fs.StringVar(&f.run, "run", "", "only this bitproducer run `id` (e.g. 20260501T030000Z)")
	fs.IntVar(&f.limit, "limit", 100, "print at most this many `rows` (0: all)")
	fs.BoolVar(&f.json, "json", false, "print JSON, one object per line, instead of a table")
}

const (
	bitlogResultsUsage = `List bit check results in (run, account, store, space, content) order.
Example: millctl bitlog results --run 20260501T030000Z --result FAILURE`
	bitlogReportsUsage = "List the reports of spaces (result, counts, location of the TSV), newest first."
)

// bitlogResultsOptions are the options of bitlog results.
type bitlogResultsOptions struct {
	bitlogFilter
	result string
}

func (o *bitlogResultsOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.result, "result", "", "only this `result`: SUCCESS, FAILURE or ERROR")
}

func (o *bitlogResultsOptions) run(ctx context.Context, a *app, args []string) error {
	f := &o.bitlogFilter
	res := bitlog.Result(strings.ToUpper(o.result))
	if res != "" && !res.Valid() {
		return usagef("--result %q: want SUCCESS, FAILURE or ERROR", o.result)
	}
	if f.limit < 0 {
		return usagef("--limit %d: must not be negative", f.limit)
	}
	return withDB(ctx, f.dbURL, args, func(db *milldb.DB) error {
		return printResults(ctx, a, pgbitlog.New(db.Pool), f, bitlog.Filter{
			RunID: f.run, Account: f.account, StoreID: f.store, SpaceID: f.space, Result: res,
		})
	})
}

// bitlogReportsOptions are the options of bitlog reports.
type bitlogReportsOptions struct{ bitlogFilter }

func (o *bitlogReportsOptions) run(ctx context.Context, a *app, args []string) error {
	f := &o.bitlogFilter
	if f.limit < 0 {
		return usagef("--limit %d: must not be negative", f.limit)
	}
	return withDB(ctx, f.dbURL, args, func(db *milldb.DB) error {
		limit := f.limit
		if limit == 0 {
			limit = bitlog.MaxPageSize
		}
		reps, err := pgbitlog.New(db.Pool).Reports(ctx, bitlog.ReportFilter{
			RunID: f.run, Account: f.account, StoreID: f.store, SpaceID: f.space, Limit: limit,
		})
		if err != nil {
			return err
		}
		return printReports(a, reps, f.json)
	})
}

// resultJSON is a row as `bitlog results --json` prints it.
type resultJSON struct {
	RunID           string    `json:"run_id"`
	Account         string    `json:"account"`
	StoreID         string    `json:"store_id"`
	StoreKind       string    `json:"store_kind,omitempty"`
	SpaceID         string    `json:"space_id"`
	ContentID       string    `json:"content_id"`
	Result          string    `json:"result"`
	Case            int       `json:"case"`
	ContentChecksum string    `json:"content_checksum,omitempty"`
	StorageChecksum string    `json:"storage_checksum,omitempty"`
	IndexChecksum   string    `json:"index_checksum,omitempty"`
	AuditChecksum   string    `json:"audit_checksum,omitempty"`
	Details         string    `json:"details,omitempty"`
	CheckedAt       time.Time `json:"checked_at"`
	// How C was made (bitlog.Method; none on rows recorded without one),
	// the bytes hashed, and whether the copy was archived.
	Method   string `json:"method,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"`
	Archived bool   `json:"archived,omitempty"`
}

// printResults pages through the results, printing at most f.limit rows.
func printResults(ctx context.Context, a *app, l bitlog.Log, f *bitlogFilter, flt bitlog.Filter) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if !f.json {
		fmt.Fprintln(tw, "CHECKED\tRUN\tACCOUNT\tSTORE\tSPACE\tCONTENT\tRESULT\tCASE\tDETAILS")
	}
	printed := 0
	for {
		flt.Limit = bitlog.MaxPageSize
		if f.limit > 0 {
			flt.Limit = min(f.limit-printed, bitlog.MaxPageSize)
		}
		rows, next, err := l.Results(ctx, flt)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if f.json {
				if err := enc.Encode(resultJSON{r.RunID, r.Account, r.StoreID, r.StoreKind, r.SpaceID, r.ContentID, string(r.Result), r.Case,
					r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum, r.Details, r.CheckedAt.UTC(),
					string(r.Method), r.Bytes, r.Archived}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.CheckedAt.UTC().Format(time.RFC3339), bitlogCell(r.RunID),
					bitlogCell(r.Account), bitlogCell(r.StoreID), bitlogCell(r.SpaceID), strconv.Quote(r.ContentID), r.Result, bitlogCase(r.Case), bitlogCell(r.Details))
			}
			printed++
		}
		if next == "" || (f.limit > 0 && printed >= f.limit) {
			break
		}
		flt.After = next
	}
	if f.json {
		return nil
	}
	return tw.Flush()
}

// reportJSON is a report as `bitlog reports --json` prints it.
type reportJSON struct {
	RunID     string    `json:"run_id"`
	Account   string    `json:"account"`
	StoreID   string    `json:"store_id"`
	SpaceID   string    `json:"space_id"`
	Result    string    `json:"result"`
	Total     int64     `json:"total"`
	Success   int64     `json:"success"`
	Failure   int64     `json:"failure"`
	Error     int64     `json:"error"`
	Location  string    `json:"location,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func printReports(a *app, reps []bitlog.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range reps {
			c := r.Counts
			if err := enc.Encode(reportJSON{r.RunID, r.Account, r.StoreID, r.SpaceID, string(r.Result),
				c.Total, c.Success, c.Failure, c.Error, r.Location, r.CreatedAt.UTC()}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tRUN\tACCOUNT\tSTORE\tSPACE\tRESULT\tTOTAL\tSUCCESS\tFAILURE\tERROR\tLOCATION")
	for _, r := range reps {
		c := r.Counts
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.CreatedAt.UTC().Format(time.RFC3339), bitlogCell(r.RunID),
			bitlogCell(r.Account), bitlogCell(r.StoreID), bitlogCell(r.SpaceID), r.Result, c.Total, c.Success, c.Failure, c.Error, bitlogCell(r.Location))
	}
	return tw.Flush()
}

func bitlogCase(c int) string {
	if c == 0 {
		return "-"
	}
	return strconv.Itoa(c)
}

// bitlogCell is a table cell of a value read from the bit log: encoded
// by pkg/tsv (one line, one column, no formula start, bidi and control
// characters escaped visibly), "-" when empty. Content IDs are quoted
// (strconv.Quote) instead.
func bitlogCell(s string) string {
	return dash(tsv.Cell(s))
}
