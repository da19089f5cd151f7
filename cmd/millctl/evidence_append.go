package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/migrate"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/biterror"
	"github.com/millfleet/mill/processors/bitreport"
	"github.com/millfleet/mill/processors/dup"
)

const evidenceAppendUsage = `millctl evidence append --log DIR|s3://BUCKET/PREFIX [--signer-key-file FILE] --database-url URL [--audit-table TABLE] [--settle 1h] [--start TIME]

Derives the evidence events from Mill's own records and appends them to the
log, signing a checkpoint after each page: the fixity checks of the bit log
(PostgreSQL), the replications, repairs and deletions of the audit log
(DynamoDB). One pass covers the records timed from where the last pass ended
(the log's cursor; the first pass starts at --start) to --settle ago. Run it
from cron, like the producers: one invocation at a time holds the lease
"evidence-append" (--lease-table; "none": an in-memory lease, for a single
local process), so the log has one writer. Killed at any moment, the next
invocation goes on from the cursor and no event is lost or appended twice;
a log whose cursor is lost is read whole first, so none is appended again.
The signer key is the file --signer-key-file (mode 0600) or the key itself in
MILL_EVIDENCE_SIGNER_KEY. Prints what it appended; the exit code is 1 when a
record could not be an event or changed after it was logged (each is named).`

// evidenceAppendLease is the lease the appender holds.
const evidenceAppendLease = "evidence-append"

// evidenceSignerEnv holds the signer key itself when no file is named.
const evidenceSignerEnv = derive.EnvSignerKey

// evidenceSourceFlags are the flag group that names Mill's records: the
// database and the audit table.
type evidenceSourceFlags struct{ dbURL, auditTable string }

func (f *evidenceSourceFlags) defineGroup(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &f.dbURL)
	fs.StringVar(&f.auditTable, "audit-table", auditlog.DefaultTable, "DynamoDB audit log `table`")
}

// open opens the sources; close the database after use.
func (f *evidenceSourceFlags) open(ctx context.Context, a *app) (derive.CheckSources, *milldb.DB, error) {
	if f.dbURL == "" {
		return derive.CheckSources{}, nil, usagef("--database-url is required (or MILL_DATABASE_URL)")
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return derive.CheckSources{}, nil, err
	}
	db, err := milldb.Open(ctx, f.dbURL, milldb.Config{MaxConns: 2})
	if err != nil {
		return derive.CheckSources{}, nil, err
	}
	bits := pgbitlog.New(db.Pool)
	return derive.CheckSources{Sources: derive.Sources{Bits: bits, Audit: dynamoauditlog.New(cfg.DynamoDB(), f.auditTable)}, Rows: bits,
		Index: pgcontentindex.New(db.Pool)}, db, nil
}

// evidenceUsers are the user IDs of Mill's processors, from their constants.
var evidenceUsers = derive.Users{
	Duplication: dup.UserID, Repair: biterror.DefaultUserID, Migration: migrate.UserID,
	Mill: []string{bit.DefaultUserID, bitreport.AdminUserID}, BitAgent: bit.DefaultUserID,
}

type evidenceAppendOptions struct {
	evidenceSourceFlags
	log, signerFile, leaseTable string
	leaseTTL, settle            time.Duration
	start                       string
	page                        int
}

func (o *evidenceAppendOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.log, "log", "", "the evidence log: a `directory`, or s3://BUCKET/PREFIX")
	fs.StringVar(&o.signerFile, "signer-key-file", "", "`file` holding the log's secret signer key (else "+evidenceSignerEnv+" holds the key)")
	fs.StringVar(&o.leaseTable, "lease-table", lease.DefaultTable, "DynamoDB `table` of the appender's lease (\"none\": an in-memory lease)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", 2*time.Minute, "how long the lease outlives a crashed holder (renewed every third of it)")
	fs.DurationVar(&o.settle, "settle", time.Hour, "derive only records timed at least this long ago (a record written later than this after its time is missed, and the cross-check names it)")
	fs.StringVar(&o.start, "start", "", "where the first pass starts, an RFC 3339 `time` (default: the beginning)")
	fs.IntVar(&o.page, "page", 1000, "records read, and events appended, at a time")
}

func (o *evidenceAppendOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.log == "" {
		return usagef("--log is required")
	}
	if o.settle < 0 || o.page < 1 || o.page > evidence.DefaultDedupWindow/2 || o.leaseTTL < 3*time.Second {
		return usagef("--settle must not be negative, --page 1..%d, --lease-ttl at least 3s", evidence.DefaultDedupWindow/2)
	}
	var start time.Time
	if o.start != "" {
		var err error
		if start, err = time.Parse(time.RFC3339Nano, o.start); err != nil {
			return usagef("--start %q: want an RFC 3339 time", o.start)
		}
	}
	skey, err := evidence.LoadSignerKey(o.signerFile, evidenceSignerEnv, a.getenv)
	if err != nil {
		return err
	}
	vkey, err := evidence.VerifierKey(skey)
	if err != nil {
		return err
	}
	verifier, err := evidence.NewVerifier(vkey)
	if err != nil {
		return err
	}
	blobs, err := evidenceBlobs(ctx, a, o.log)
	if err != nil {
		return err
	}
	src, db, err := o.open(ctx, a)
	if err != nil {
		return err
	}
	defer db.Close()
	var l lease.Lease = memlease.New(nil)
	if o.leaseTable != "none" {
		cfg, err := a.awsConfig(ctx)
		if err != nil {
			return err
		}
		l = dynamolease.New(cfg.DynamoDB(), o.leaseTable, nil)
	}
	return withLease(ctx, a, l, o.leaseTTL, func(ctx context.Context) error {
		log, err := evidence.Open(ctx, blobs, skey, evidence.Options{})
		if err != nil {
			return err
		}
		ap := &derive.Appender{Log: log, Blobs: blobs, Sources: src.Sources, Users: evidenceUsers,
			Settle: o.settle, Start: start, Page: o.page, Logger: a.logger, Verifier: verifier}
		sum, err := ap.Run(ctx)
		return reportAppend(a, sum, err)
	})
}

// withLease runs f holding the appender's lease, kept while f runs.
func withLease(ctx context.Context, a *app, l lease.Lease, ttl time.Duration, f func(context.Context) error) (err error) {
	self := lease.Self(time.Now())
	granted, cur, err := l.Acquire(ctx, evidenceAppendLease, self, ttl)
	if err != nil {
		return err
	}
	if !granted {
		return fmt.Errorf("another appender holds the lease %q: %s", evidenceAppendLease, cur)
	}
	kctx, stop := lease.Keep(ctx, l, evidenceAppendLease, self.ID, ttl, cur.Expires, lease.KeepOptions{Logger: a.logger})
	defer func() {
		if lost := stop(); lost != nil {
			err = errors.Join(err, lost)
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rerr := l.Release(rctx, evidenceAppendLease, self.ID); rerr != nil {
			a.logger.Warn("lease release failed; it will expire", "error", rerr)
		}
	}()
	return f(kctx)
}

// reportAppend prints what a pass did.
func reportAppend(a *app, sum derive.Summary, err error) error {
	for _, u := range sum.Underivable {
		fmt.Fprintf(a.stdout, "UNDERIVABLE %s\n", u)
	}
	for _, id := range sum.Conflicts {
		fmt.Fprintf(a.stdout, "CHANGED event %s: its record changed after it was logged (millctl evidence verify --cross-check names how)\n", id)
	}
	size := int64(0)
	if sum.Checkpoint != nil {
		size = sum.Checkpoint.Size
	}
	fmt.Fprintf(a.stdout, "records %s to %s: %d read, %d events appended, %d already in the log; log size %d\n",
		sum.From.Format(time.RFC3339Nano), sum.Until.Format(time.RFC3339Nano), sum.Records, sum.Appended, sum.Duplicates, size)
	if err != nil {
		return err
	}
	if n := len(sum.Underivable) + len(sum.Conflicts); n > 0 {
		return fmt.Errorf("%d records could not be appended as they are", n)
	}
	return nil
}
