// Command bitproducer is the looping bit-integrity producer
// (docs/ARCHITECTURE.md, Bit integrity and Looping producers), run from cron
// (a scheduled container), one invocation at a time: it walks accounts →
// stores → spaces (filtered by --include/--exclude files), queues a BIT task
// per content item on the bit queue while that queue is under
// --max-queue-size, and after each space's listing one BIT_REPORT on the
// bit-report queue. State is saved after every bite (--state, a file or
// s3://bucket/key), so the next invocation resumes where this one stopped.
//
// Exit status: 0 when the run finished, the queue was full, the next run is
// not due yet or another invocation holds the lease; 3 when stores or spaces
// that kept failing were given up for the run; 1 on errors; 2 on bad
// usage. Every flag can also be set with its MILL_* environment variable;
// run `bitproducer --help` for the list.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/millfleet/mill/internal/cli/producercmd"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

const summary = `bitproducer — Mill's looping bit-integrity producer.

Queues one BIT task per content item of every selected space (1000 per bite,
interleaved across spaces) while the bit queue is under its maximum size, and
one BIT_REPORT per space once its listing is complete. One invocation at a
time (a DynamoDB lease); state saved after every bite. Exits 0 when done, not
due, the queue is full or the lease is held; 3 when stores or spaces that kept
failing were given up (the rest was checked; the next run retries them).

Filter files (--include, --exclude): one /account/store/space pattern per
line, "*" or "prefix*" per segment, blank lines and # comments allowed;
exclusion wins; no inclusion file means every space.

The bit log (--database-url, PostgreSQL) is required: the producer records
there each space of its runs and how many items it listed, and the report
processor makes reports only for runs recorded there. --skip-recent leaves
out spaces whose latest report is a SUCCESS younger than the age that covered
every item of a run the producer recorded (the Java Mill skips 60 days); the
summary names each with its report. Each run measures the fixity coverage of
every space at its start (the content index and the bit log's latest fresh
verdicts), checks the most overdue spaces first and logs each store's
figures ("fixity coverage": the overdue-copies metric); --skip-covered leaves
out spaces whose every copy is within its store's fixity target and stays so
for the margin given, and in the other spaces queues only the copies that are
due (an overdue copy is checked at once). A space is left out when either rule
says so. --start-at makes runs begin at a time of day.
--notify-topic-arn announces completed runs and failed invocations.

Cold copies: with --at-rest-report-bucket, the archived items of stores whose
archived method is compute-checksum get no BIT task from the listing but one
S3 Batch Operations Compute checksum job (MD5) per space and run; every
invocation follows the jobs it created and, once a job is complete, queues one
BIT task per object naming the job (C is the computed checksum: no GET, no
restore). A failed or cancelled job's items are recorded as ERRORs. In stores
whose archived method is restore, an archived item that cannot be read gets a
restore request (--restore-days, --restore-tier) instead of a BIT and is left
out of the run's count; a later run, finding it restored, reads it. The log
counts the restores requested per space.

Usage: bitproducer [flags]`

var command = producercmd.Command{
	Name: "bitproducer", Summary: summary, StateKey: "bitproducer/state.json", Frequency: "1m",
	BiteSize: true, Filter: true, Runs: true,
	Database:    "the bit log, where each space's run is recorded",
	DatabaseWhy: ": the runs are recorded in the bit log, and reports are made only for recorded runs",
	Define: func(fs *flag.FlagSet) producercmd.Own {
		bitQueue := fs.String("bit-queue", "", "bit queue `name` (default prefix + bit)")
		reportQueue := fs.String("report-queue", "", "bit-report queue `name` (default prefix + bit-report)")
		atRestBucket := fs.String("at-rest-report-bucket", "", "S3 `bucket` of the at-rest checksum jobs' manifests and completion reports; set, the archived\nitems (GLACIER, DEEP_ARCHIVE) of stores whose archived method is compute-checksum are checked at\nrest by one S3 Batch Operations job per space and run, never read; empty: they are not read (C N/A)")
		atRestPrefix := fs.String("at-rest-report-prefix", "at-rest/", "key `prefix` of the jobs' manifests and reports in --at-rest-report-bucket")
		atRestRole := fs.String("at-rest-role-arn", "", "`ARN` of the role S3 Batch Operations runs the jobs as (required with --at-rest-report-bucket)")
		atRestPriority := fs.Int("at-rest-priority", 10, "`priority` of the jobs (higher first)")
		atRestAccount := fs.String("at-rest-account-id", "", "AWS `account` that owns the jobs (default: the caller's)")
		restoreDays := fs.Int("restore-days", bit.DefaultRestoreDays, "`days` a restored copy of an archived item is kept (stores whose archived method is restore):\nlonger than the time between runs plus the restore's hours (Bulk: up to 48), or it expires before\nthe next run reads it")
		restoreTierFlag := fs.String("restore-tier", string(storage.RestoreBulk), "retrieval `tier` of those restores: Bulk (the cheapest; up to 48 hours from Deep Archive),\nStandard or Expedited (not for Deep Archive)")
		skipRecentFlag := fs.String("skip-recent", "0", "leave out spaces whose latest report is a SUCCESS younger than this `age`, covering every\nitem of a run this producer recorded: Nd (days) or a duration (the Java Mill: 60d); 0: check every space")
		skipCoveredFlag := fs.String("skip-covered", "off", "leave out the copies that are within their store's fixity target and stay so for this `margin`\n(whole spaces, or copy by copy in a space that is due): Nd (days) or a duration (the run frequency\nkeeps every copy within target until the next run); off: check every copy (the most overdue spaces first either way)")
		var skipRecent, coveredMargin time.Duration
		var restoreTier storage.RestoreTier
		skipCovered := false
		return producercmd.Own{
			Check: func() []error {
				var err error
				var errs []error
				if skipRecent, err = bit.ParseAge(*skipRecentFlag); err != nil {
					errs = append(errs, fmt.Errorf("--skip-recent: %w", err))
				}
				if *skipCoveredFlag != "off" {
					skipCovered = true
					if coveredMargin, err = bit.ParseAge(*skipCoveredFlag); err != nil {
						errs = append(errs, fmt.Errorf("--skip-covered: %w (or off)", err))
					}
					if skipRecent > 0 {
						errs = append(errs, fmt.Errorf("--skip-recent and --skip-covered: use one (--skip-covered checks copy by copy, so a recent report covers only the copies its run found due)"))
					}
				}
				if *atRestBucket != "" && *atRestRole == "" {
					errs = append(errs, fmt.Errorf("--at-rest-role-arn: required with --at-rest-report-bucket"))
				}
				if *restoreDays < 1 || *restoreDays > 30000 {
					errs = append(errs, fmt.Errorf("--restore-days: %d is not within 1..30000", *restoreDays))
				}
				if restoreTier, err = storage.ParseRestoreTier(*restoreTierFlag); err != nil || *restoreTierFlag == "" {
					errs = append(errs, fmt.Errorf("--restore-tier: %q: want Bulk, Standard or Expedited", *restoreTierFlag))
				}
				if *atRestPriority < 0 || *atRestPriority > math.MaxInt32 {
					errs = append(errs, fmt.Errorf("--at-rest-priority: %d is not within 0..%d", *atRestPriority, math.MaxInt32))
				}
				return errs
			},
			Build: func(ctx context.Context, e *producercmd.Env) (looping.Config, error) {
				bitQ, err := e.OpenQueue(ctx, orName(*bitQueue, *e.Flags.QueuePrefix, queue.KeyBit))
				if err != nil {
					return looping.Config{}, err
				}
				reportQ, err := e.OpenQueue(ctx, orName(*reportQueue, *e.Flags.QueuePrefix, queue.KeyBitReport))
				if err != nil {
					return looping.Config{}, err
				}
				bitLog := pgbitlog.New(e.DB.Pool)
				if f := e.Flags.Frequency; !f.IsZero() {
					now := time.Now()
					if gap := f.Next(now).Sub(now) + restoreHours; gap >= time.Duration(*restoreDays)*24*time.Hour {
						e.Logger.Warn("--restore-days is shorter than the time between runs plus a restore's hours: a copy restored by one run may expire before the next run reads it",
							"restore_days", *restoreDays, "frequency", f.String())
					}
				}
				var atRest *bit.AtRest
				if *atRestBucket != "" {
					atRest = &bit.AtRest{
						Checker: s3batch.New(e.AWS.S3Control(), e.S3, s3batch.Options{AccountID: *atRestAccount, STS: e.AWS.STS()}),
						Log:     bitLog, Queue: bitQ,
						ReportBucket: *atRestBucket, ReportPrefix: *atRestPrefix, RoleARN: *atRestRole, Priority: int32(*atRestPriority),
					}
				}
				p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.Registry, Opener: e.Opener, Filter: e.Filter, Logger: e.Logger},
					SkipRecent: skipRecent, BitLog: bitLog, AtRest: atRest,
					Restore:  &bit.Restore{Days: *restoreDays, Tier: restoreTier},
					Coverage: &fixity.Source{Index: pgcontentindex.New(e.DB.Pool), Verdicts: bitLog}, Verdicts: bitLog,
					SkipCovered: skipCovered, CoveredMargin: coveredMargin})
				return looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: bitQ, Report: reportQ}}, err
			},
		}
	},
}

// restoreHours is how long a restore may take (S3 Bulk from Deep Archive).
const restoreHours = 48 * time.Hour

// orName is name, or the queue of key under prefix when name is empty.
func orName(name, prefix, key string) string {
	if name == "" {
		return queue.Name(prefix, key)
	}
	return name
}

func main() { command.Main() }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return command.Run(ctx, args, getenv, stdout, stderr)
}
