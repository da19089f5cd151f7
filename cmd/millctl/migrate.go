package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/milldb"
)

func init() {
	register(&command{
		name:    "migrate up",
		summary: "apply every pending database migration",
		usage:   "Apply every pending migration, each in its own transaction, under an advisory lock.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			dbURL := databaseURLFlag(fs)
			return func(ctx context.Context, args []string) error {
				return withDB(ctx, *dbURL, args, func(db *milldb.DB) error {
					steps, err := milldb.Up(ctx, db.Pool)
					printSteps(a, steps)
					if err != nil {
						return err
					}
					return printVersion(ctx, a, db, len(steps))
				})
			}
		},
	})
	register(&command{
		name:    "migrate down",
		summary: "revert the latest database migrations (--steps, default 1)",
		usage:   "Revert the latest --steps applied migrations, newest first. This drops tables and their data.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			dbURL := databaseURLFlag(fs)
			steps := fs.Int("steps", 1, "how many migrations to revert")
			return func(ctx context.Context, args []string) error {
				if *steps < 1 {
					return usagef("--steps must be at least 1, got %d", *steps)
				}
				return withDB(ctx, *dbURL, args, func(db *milldb.DB) error {
					done, err := milldb.Down(ctx, db.Pool, *steps)
					printSteps(a, done)
					if err != nil {
						return err
					}
					return printVersion(ctx, a, db, len(done))
				})
			}
		},
	})
	register(&command{
		name:    "migrate status",
		summary: "list database migrations with their applied time",
		usage:   "List every migration this build knows, applied (with its time) or pending.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			dbURL := databaseURLFlag(fs)
			return func(ctx context.Context, args []string) error {
				return withDB(ctx, *dbURL, args, func(db *milldb.DB) error {
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
		},
	})
}

func withDB(ctx context.Context, url string, args []string, f func(*milldb.DB) error) error {
	if len(args) > 0 {
		return usagef("unexpected arguments: %q", args)
	}
	if url == "" {
		return usagef("--database-url (MILL_DATABASE_URL) is required")
	}
	db, err := milldb.Open(ctx, url, milldb.Config{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	return f(db)
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
