package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
)

// Retention defaults and floors.
const (
	// defaultTombstoneRetention keeps a content-index tombstone 90 days
	// after its delete event.
	defaultTombstoneRetention = 90 * 24 * time.Hour
	// minTombstoneRetention: SQS keeps a message at most 14 days, so an
	// audit event older than that cannot arrive any more (redrives from the
	// dead-letter queue included, with the default 14-day dead-letter and
	// 4-day work-queue retention, within 18 days).
	minTombstoneRetention = 18 * 24 * time.Hour
)

// retentionPlan is what the retention command drops at now.
type retentionPlan struct {
	cutoff     time.Time // first month of bit log history kept
	months     []bitlog.MonthInfo
	expired    int
	tombBefore time.Time // tombstones whose delete is older go
	tombstones int64
}

const bitlogRetentionUsage = `Show what the retention of bit integrity history drops, and drop it with --apply.

The bit log keeps --keep-months months of results (default 13: this month and
the twelve before it); the bit log is partitioned by month, so an expired month
is dropped whole, in a moment whatever its size. Bit-integrity reports
(bitlog reports) and the TSV files are kept. Content-index tombstones (rows of
deleted items, kept so that a late, older event cannot bring an item back) are
purged --tombstone-retention after their delete event (default 90 days; at
least 18 days, longer than an audit event can wait on the queues).

Without --apply nothing is changed: the months (rows as PostgreSQL estimates
them, "?" before a month is analysed) and the tombstone count are printed with
what --apply would do. Run it from cron or a scheduled task, e.g. daily.
Example: millctl bitlog retention --apply`

// bitlogRetentionOptions are the options of bitlog retention.
type bitlogRetentionOptions struct {
	dbURL string
	keep  int
	tomb  time.Duration
	apply bool
}

func (o *bitlogRetentionOptions) define(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &o.dbURL)
	fs.IntVar(&o.keep, "keep-months", bitlog.DefaultRetentionMonths, "months of bit log history to keep, this month included")
	fs.DurationVar(&o.tomb, "tombstone-retention", defaultTombstoneRetention, "how long a content-index tombstone is kept after its delete event")
	fs.BoolVar(&o.apply, "apply", false, "drop the expired months and purge the expired tombstones (default: only show them)")
}

func (o *bitlogRetentionOptions) run(ctx context.Context, a *app, args []string) error {
	if o.keep < 1 {
		return usagef("--keep-months %d: keep at least 1 (this month)", o.keep)
	}
	if o.tomb < minTombstoneRetention {
		return usagef("--tombstone-retention %s: at least %s (an audit event can wait that long on the queues)", o.tomb, minTombstoneRetention)
	}
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		return retention(ctx, a.stdout, pgbitlog.New(db.Pool), pgcontentindex.New(db.Pool), time.Now(), o.keep, o.tomb, o.apply)
	})
}

// plan reads what is expired at now.
func plan(ctx context.Context, bl bitlog.Pruner, ix contentindex.Pruner, now time.Time, keep int, tomb time.Duration) (retentionPlan, error) {
	p := retentionPlan{cutoff: bitlog.Cutoff(now, keep), tombBefore: now.Add(-tomb).UTC()}
	var err error
	if p.months, err = bl.Months(ctx); err != nil {
		return p, err
	}
	for _, m := range p.months {
		if m.Month.Before(p.cutoff) {
			p.expired++
		}
	}
	if p.tombstones, err = ix.Tombstones(ctx, p.tombBefore); err != nil {
		return p, err
	}
	return p, nil
}

// retention prints the plan and, when apply, carries it out.
func retention(ctx context.Context, w io.Writer, bl bitlog.Pruner, ix contentindex.Pruner, now time.Time, keep int, tomb time.Duration, apply bool) error {
	p, err := plan(ctx, bl, ix, now, keep, tomb)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "bit log: keeping %d months, from %s\n", keep, p.cutoff.Format("2006-01"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MONTH\tROWS\tACTION")
	for _, m := range p.months {
		action := "keep"
		if m.Month.Before(p.cutoff) {
			action = "drop"
		}
		rows := "?"
		if m.Rows >= 0 {
			rows = fmt.Sprint(m.Rows)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Month.Format("2006-01"), rows, action)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "content index: %d tombstones of deletes before %s (kept %s)\n", p.tombstones, p.tombBefore.Format(time.RFC3339), tomb)
	if !apply {
		fmt.Fprintf(w, "dry run: nothing changed; --apply drops %d months and purges %d tombstones\n", p.expired, p.tombstones)
		return nil
	}
	dropped, err := bl.DropMonths(ctx, p.cutoff)
	for _, m := range dropped {
		fmt.Fprintf(w, "dropped %s\n", m.Month.Format("2006-01"))
	}
	if err != nil {
		return err
	}
	var purged int64
	for {
		n, err := ix.PurgeTombstones(ctx, p.tombBefore, 0)
		purged += n
		if err != nil {
			fmt.Fprintf(w, "purged %d tombstones\n", purged)
			return err
		}
		if n == 0 {
			break
		}
	}
	fmt.Fprintf(w, "done: dropped %d months, purged %d tombstones\n", len(dropped), purged)
	return nil
}
