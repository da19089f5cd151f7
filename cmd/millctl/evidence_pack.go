package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/evidence/pack"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/ndsa"
)

const evidencePackUsage = `millctl evidence pack --period 2026-Q3|2026-07 | --since DATE --until DATE --log DIR|s3://BUCKET/PREFIX --key FILE [--out-dir DIR]

Writes a dated bundle of the period's evidence for an auditor to read
offline: mill-evidence-PERIOD-MADE.tar.gz in --out-dir, one directory with a
README.md explaining each file; the evidence log's latest signed
checkpoint and public key, the log's verification, the period's events
summarised (per type and outcome, per agent, repairs), fixity coverage of
every space (as measured now, from the bit log and content index), the
copies of each space with their stores' providers, regions, threat zones
and storage classes, the duplication policies in force and the history of
the policies and the store registry (the change log), and the NDSA Levels
of Digital Preservation v2.0 matrix: a verdict per Storage, Integrity,
Control and Metadata cell, why, and the files behind it.

--period is a quarter (2026-Q3) or a month (2026-07); --since and --until
(a date, or an RFC 3339 time; until exclusive) give any other range.
Exit status 1 when a store cannot be listed (no bundle is written) or
when the evidence log does not verify (the bundle is written and says
so).`

type evidencePackOptions struct {
	evidenceLogFlags
	src                  *configSource
	dbURL, changeLog     string
	period, since, until string
	out                  string
}

func (o *evidencePackOptions) define(fs *flag.FlagSet, a *app) {
	o.src = configFlags(fs, a)
	databaseURLVar(fs, &o.dbURL)
	fs.StringVar(&o.period, "period", "", "the `period`: a quarter (2026-Q3) or a month (2026-07)")
	fs.StringVar(&o.since, "since", "", "the period's start (a `date` or RFC 3339 time), with --until")
	fs.StringVar(&o.until, "until", "", "the period's end, exclusive (a `date` or RFC 3339 time), with --since")
	fs.StringVar(&o.out, "out-dir", ".", "the `directory` the bundle is written to")
	fs.StringVar(&o.changeLog, "change-log", "", "the console's change log: s3://`BUCKET/PREFIX` or a directory (default: the config bucket under "+defaultChangeLogPrefix+", or CONFIG_DIR/console-changes)")
}

// periodOf reads --period, or --since and --until.
func (o *evidencePackOptions) periodOf() (pack.Period, error) {
	switch {
	case o.period != "" && (o.since != "" || o.until != ""):
		return pack.Period{}, usagef("--period or --since/--until: choose one")
	case o.period != "":
		p, err := pack.ParsePeriod(o.period)
		if err != nil {
			return p, usagef("--period: %v", err)
		}
		return p, nil
	case o.since == "" || o.until == "":
		return pack.Period{}, usagef("give --period, or both --since and --until")
	}
	since, err := pack.ParseTime(o.since)
	if err != nil {
		return pack.Period{}, usagef("--since %v", err)
	}
	until, err := pack.ParseTime(o.until)
	if err != nil {
		return pack.Period{}, usagef("--until %v", err)
	}
	p, err := pack.Range(since, until)
	if err != nil {
		return p, usagef("--since/--until: %v", err)
	}
	return p, nil
}

func (o *evidencePackOptions) run(ctx context.Context, a *app, args []string) error {
	p, err := o.periodOf()
	if err != nil {
		return err
	}
	if st, err := os.Stat(o.out); err != nil || !st.IsDir() {
		return usagef("--out-dir %q: not a directory", o.out)
	}
	blobs, v, err := o.open(ctx, a)
	if err != nil {
		return err
	}
	vkey, err := os.ReadFile(o.key)
	if err != nil {
		return err
	}
	return withDB(ctx, o.dbURL, args, func(db *milldb.DB) error {
		reg, err := o.src.registry(ctx)
		if err != nil {
			return printFileErrors(a, err)
		}
		spaces, failed, err := listSpaces(ctx, a, reg, reg)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			var errs []error
			for _, f := range failed {
				fmt.Fprintf(a.stderr, "%s/%s: not listed: %v\n", f.Account, f.StoreID, f.Err)
				errs = append(errs, f.Err)
			}
			return fmt.Errorf("%d stores could not be listed: no bundle written (it would miss their copies): %w", len(failed), errors.Join(errs...))
		}
		policies, err := o.src.policies(ctx)
		if err != nil {
			return err
		}
		s3c, err := o.src.s3(ctx)
		if err != nil {
			return err
		}
		changes, err := openChangeLog(o.changeLog, s3c, o.src.Bucket, o.src.Prefix, o.src.Dir)
		if err != nil {
			return err
		}
		pk, err := pack.Build(ctx, pack.Sources{Registry: reg, Spaces: spaces, Index: pgcontentindex.New(db.Pool), Verdicts: pgbitlog.New(db.Pool),
			Log: blobs, Verifier: v, VerifierKey: strings.TrimSpace(string(vkey)), Policies: policies, Changes: changes}, p)
		if err != nil {
			return err
		}
		path, err := writeBundle(o.out, pk)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\nNDSA cells: %s\n", path, ndsa.Tally(pk.Cells))
		if !pk.Facts.LogVerified {
			return fmt.Errorf("the evidence log does not verify (see %s in the bundle)", pack.FileVerification)
		}
		return nil
	})
}

// writeBundle writes the pack to dir through a temporary file, so a
// failed write leaves no partial bundle under the final name.
func writeBundle(dir string, pk *pack.Pack) (string, error) {
	f, err := os.CreateTemp(dir, ".mill-evidence-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := pk.WriteTarGz(f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	path := filepath.Join(dir, pk.Name())
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(f.Name(), path)
}
