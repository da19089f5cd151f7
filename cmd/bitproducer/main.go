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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/millfleet/mill/internal/producercmd"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
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
summary names each with its report. --start-at makes runs begin at a time of day.
--notify-topic-arn announces completed runs and failed invocations.

Usage: bitproducer [flags]`

// Defaults of the flags.
const (
	defaultConfigBucket = "mill-config"
	stateKey            = "bitproducer/state.json"
	defaultFrequency    = "1m"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(producercmd.ExitCode("bitproducer", err, os.Stderr))
}

// options are the parsed flags.
type options struct {
	configBucket, configPrefix, configDir string
	queuePrefix, bitQueue, reportQueue    string
	state, stateBucket                    string
	frequency                             looping.Frequency
	maxQueueSize                          int64
	biteSize                              int
	leaseTable                            string
	filter                                *producercmd.Filter
	output                                *producercmd.Output
	skipRecent                            string
	databaseURL                           string
	schedule                              *producercmd.Schedule
}

func defineFlags(fs *flag.FlagSet) *options {
	o := &options{}
	freq, _ := looping.ParseFrequency(defaultFrequency)
	o.frequency = freq
	fs.StringVar(&o.configBucket, "config-bucket", defaultConfigBucket, "S3 `bucket` holding accounts.json")
	fs.StringVar(&o.configPrefix, "config-prefix", "", "key `prefix` of accounts.json in the config bucket")
	fs.StringVar(&o.configDir, "config-dir", "", "local `directory` holding accounts.json, instead of the config bucket")
	fs.StringVar(&o.queuePrefix, "queue-prefix", queue.DefaultPrefix, "`prefix` of the queue names")
	fs.StringVar(&o.bitQueue, "bit-queue", "", "bit queue `name` (default prefix + bit)")
	fs.StringVar(&o.reportQueue, "report-queue", "", "bit-report queue `name` (default prefix + bit-report)")
	fs.StringVar(&o.state, "state", "", "where the state is kept: a local file `path` or s3://bucket/key (default s3://STATE-BUCKET/"+stateKey+")")
	fs.StringVar(&o.stateBucket, "state-bucket", wiring.DefaultStateBucket, "S3 `bucket` of the state when --state is not given (millctl setup creates it)")
	fs.TextVar(&o.frequency, "frequency", freq, "time between run starts, N followed by s, M (minutes), h, d or m (months); 0 = one run only")
	fs.Int64Var(&o.maxQueueSize, "max-queue-size", looping.DefaultMaxQueueSize, "stop (and resume next time) when the bit queue has this many visible `messages`")
	fs.IntVar(&o.biteSize, "bite-size", looping.DefaultBiteSize, "most `items` of one space queued per bite")
	fs.StringVar(&o.leaseTable, "lease-table", lease.DefaultTable, "DynamoDB lease `table` (\"none\": no lease, for a single local process)")
	o.filter = producercmd.FilterFlags(fs)
	o.output = producercmd.OutputFlags(fs)
	fs.StringVar(&o.skipRecent, "skip-recent", "0", "leave out spaces whose latest report is a SUCCESS younger than this `age`, covering every\nitem of a run this producer recorded: Nd (days) or a duration (the Java Mill: 60d); 0: check every space")
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL connection `URL` of the bit log (required): each space's run is recorded there")
	o.schedule = producercmd.ScheduleFlags(fs)
	return o
}

// config is what the flags resolve to before any AWS call.
type config struct {
	o          *options
	filter     bit.Filter
	skipRecent time.Duration
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bitproducer", flag.ContinueOnError)
	o := defineFlags(fs)
	if err := producercmd.Parse(fs, args, getenv, stderr, summary); err != nil {
		return nil, err
	}
	c := &config{o: o}
	errs := o.output.Parse()
	var ferrs []error
	c.filter, ferrs = o.filter.Load()
	errs = append(errs, ferrs...)
	var err error
	if err := o.schedule.Check(o.frequency); err != nil {
		errs = append(errs, err)
	}
	if c.skipRecent, err = bit.ParseAge(o.skipRecent); err != nil {
		errs = append(errs, fmt.Errorf("--skip-recent: %w", err))
	}
	if o.databaseURL == "" {
		errs = append(errs, errors.New("--database-url (MILL_DATABASE_URL) is required: the runs are recorded in the bit log, and reports are made only for recorded runs"))
	}
	if o.maxQueueSize <= 0 {
		errs = append(errs, fmt.Errorf("--max-queue-size %d: must be positive", o.maxQueueSize))
	}
	if o.biteSize <= 0 {
		errs = append(errs, fmt.Errorf("--bite-size %d: must be positive", o.biteSize))
	}
	if o.state, err = wiring.StateLocation(o.state, o.stateBucket, stateKey); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, producercmd.Usage(err)
	}
	if c.o.bitQueue == "" {
		c.o.bitQueue = queue.Name(o.queuePrefix, queue.KeyBit)
	}
	if c.o.reportQueue == "" {
		c.o.reportQueue = queue.Name(o.queuePrefix, queue.KeyBitReport)
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	o := c.o
	logger := c.o.output.Logger(stderr)
	aws, err := awsconfig.Load(ctx, awsconfig.Options{Logger: logger, Getenv: getenv})
	if err != nil {
		return err
	}
	s3c := aws.S3()

	reg, err := wiring.ConfigSource{Dir: o.configDir, Bucket: o.configBucket, Prefix: o.configPrefix}.Registry(ctx, s3c)
	if err != nil {
		return err
	}
	opener := wiring.NewOpener(reg, &aws.AWS, aws.EndpointOverride)

	sqsc := aws.SQS()
	bitQ, err := producercmd.OpenQueue(ctx, sqsc, o.bitQueue)
	if err != nil {
		return err
	}
	reportQ, err := producercmd.OpenQueue(ctx, sqsc, o.reportQueue)
	if err != nil {
		return err
	}
	state, err := producercmd.OpenState(o.state, s3c)
	if err != nil {
		return err
	}

	db, err := milldb.Open(ctx, o.databaseURL, milldb.Config{})
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := bit.New(bit.Config{Registry: reg, Opener: opener, Filter: c.filter, SkipRecent: c.skipRecent,
		BitLog: pgbitlog.New(db.Pool), Logger: logger})
	if err != nil {
		return err
	}
	return producercmd.Run(ctx, looping.Config{
		Kind:         bit.Kind,
		Producer:     p,
		Queue:        &bit.Router{Bit: bitQ, Report: reportQ},
		State:        state,
		Lease:        producercmd.Lease(aws, o.leaseTable),
		Frequency:    o.frequency,
		MaxQueueSize: o.maxQueueSize,
		BiteSize:     o.biteSize,
		Logger:       logger,
	}, c.o.output, o.schedule, aws, stdout, stderr)
}
