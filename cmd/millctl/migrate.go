package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/milldb"
)

const (
	migrateUpUsage     = "Apply every pending migration, each in its own transaction, under an advisory lock."
	migrateDownUsage   = "Revert the latest --steps applied migrations, newest first. This drops tables and their data."
	migrateStatusUsage = "List every migration this build knows, applied (with its time) or pending."
)

// migrateUpOptions are the options of migrate up.
type migrateUpOptions struct{ dbURL string }

func (o *migrateUpOptions) define(fs *flag.FlagSet, _ *app) { databaseURLVar(fs, &o.dbURL) }

func (o *migrateUpOptions) run(ctx context.Context, a *app, args []string) error {
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		steps, err := milldb.Up(ctx, db.Pool)
		printSteps(a, steps)
		if err != nil {
			return err
		}
		return printVersion(ctx, a, db, len(steps))
	})
}

// migrateDownOptions are the options of migrate down.
type migrateDownOptions struct {
	dbURL string
	steps int
}

func (o *migrateDownOptions) define(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &o.dbURL)
	fs.IntVar(&o.steps, "steps", 1, "how many migrations to revert")
}

func (o *migrateDownOptions) run(ctx context.Context, a *app, args []string) error {
	if o.steps < 1 {
		return usagef("--steps must be at least 1, got %d", o.steps)
	}
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		done, err := milldb.Down(ctx, db.Pool, o.steps)
		printSteps(a, done)
		if err != nil {
			return err
		}
		return printVersion(ctx, a, db, len(done))
	})
}

// migrateStatusOptions are the options of migrate status.
type migrateStatusOptions struct{ dbURL string }

func (o *migrateStatusOptions) define(fs *flag.FlagSet, _ *app) { databaseURLVar(fs, &o.dbURL) }

func (o *migrateStatusOptions) run(ctx context.Context, a *app, args []string) error {
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		st, err := milldb.Status(ctx, db.Pool)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
		for _, s := range st {
			at := "pending"
			if s.Applied {
				at = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%03d\t%s\t%s\n", s.Version, s.Name, at)
		}
		return tw.Flush()
	})
}

func printSteps(a *app, steps []milldb.Step) {
	for _, s := range steps {
		verb := "applied"
		if s.Direction == milldb.DirectionDown {
			verb = "reverted"
		}
		fmt.Fprintf(a.stdout, "migrate: %s %s (%v)\n", verb, s.Migration.ID(), s.Duration.Round(time.Millisecond))
	}
}

func printVersion(ctx context.Context, a *app, db *milldb.DB, changed int) error {
	st, err := milldb.Status(ctx, db.Pool)
	if err != nil {
		return err
	}
	version, pending := 0, 0
	for _, s := range st {
		if s.Applied {
			version = s.Version
		} else {
			pending++
		}
	}
	suffix := ""
	if changed == 0 {
		suffix = " — nothing to do"
	}
	fmt.Fprintf(a.stdout, "migrate: database at version %03d, %d pending%s\n", version, pending, suffix)
	return nil
}
