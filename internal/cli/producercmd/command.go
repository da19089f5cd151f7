package producercmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/telemetry"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// Command is one looping producer command, the row of the table the three
// mains fill in: what is its own. Run does the rest the same way for all.
type Command struct {
	// Name is the command's name (and the lease's kind is the loop's).
	Name string
	// Summary is the --help text above the flags.
	Summary string
	// StateKey is the state's key in --state-bucket.
	StateKey string
	// Frequency is --frequency's default.
	Frequency string
	// BiteSize defines --bite-size: the producer's bites are items.
	BiteSize bool
	// Filter defines --include and --exclude (Env.Filter).
	Filter bool
	// Database, when set, defines --database-url, required: it names what
	// the producer keeps in PostgreSQL ("the bit log"), and DatabaseWhy
	// completes the error of its absence (": the statistics go to
	// PostgreSQL").
	Database, DatabaseWhy string
	// Runs records the producer's runs (pkg/runs) in the database: it
	// defines --reports-bucket and --reports-prefix (where a run the
	// producer completes has its report), and records in --database-url
	// when Database asks for it, else in the optional --runs-database-url.
	Runs bool
	// Define defines the command's own flags on fs and returns what uses
	// them.
	Define func(fs *flag.FlagSet) Own
}

// Own is what a command does with its own flags.
type Own struct {
	// Check, when set, checks them once parsed, returning every problem.
	Check func() []error
	// Build makes the loop's Kind, Producer and Queue from the opened
	// environment; Run sets the rest of the loop from the common flags.
	Build func(ctx context.Context, e *Env) (looping.Config, error)
}

// Flags are the flags every producer has (and the optional ones Command
// asks for), parsed.
type Flags struct {
	Config       *wiring.ConfigSource
	QueuePrefix  *string
	State        string // resolved by Check: a path or s3://bucket/key
	stateBucket  string
	frequency    string
	Frequency    looping.Frequency // set by Check
	MaxQueueSize int64
	BiteSize     int
	InFlight     int
	LeaseTable   string
	LeaseTTL     time.Duration
	DatabaseURL  *string
	Reports      *wiring.Reports
	filter       *filterFlags
	Output       *Output
	Schedule     *Schedule
	Tracing      *wiring.Tracing
}

// Env is what a producer is built from: the parsed flags, the logger, AWS,
// the store registry and its opener, and the database when the command
// has one.
type Env struct {
	Flags    *Flags
	Logger   *slog.Logger
	AWS      *awsconfig.Config
	S3       *s3.Client
	Registry *stores.Registry
	Opener   *stores.Opener
	DB       *milldb.DB // nil unless --database-url is given (always with Command.Database)
	Filter   bit.Filter // the loaded --include/--exclude files
	// Tracing is on with --otlp-endpoint (nil: off); OpenQueue's queues
	// and the AWS and database clients are traced with it.
	Tracing *telemetry.Tracing
}

// OpenQueue opens the SQS queue of that name on e's client, traced with
// e.Tracing.
func (e *Env) OpenQueue(ctx context.Context, name string) (queue.Queue, error) {
	q, err := OpenQueue(ctx, e.AWS.SQS(), name)
	if err != nil {
		return nil, err
	}
	return e.Tracing.Queue(q), nil
}

// Main runs the command on the process's arguments and environment,
// stopping on SIGTERM or SIGINT, and exits with its status (ExitCode). The
// process's soft memory limit is DefaultMemoryLimit unless GOMEMLIMIT
// sets one.
func (c Command) Main() {
	limitMemory(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := c.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(ExitCode(c.Name, err, os.Stderr))
}

func (c Command) define(fs *flag.FlagSet) (*Flags, Own) {
	f := &Flags{Config: wiring.ConfigFlags(fs), QueuePrefix: wiring.QueuePrefixFlag(fs)}
	fs.StringVar(&f.State, "state", "", "where the state is kept between invocations: a local file `path` or s3://bucket/key\n(default s3://STATE-BUCKET/"+c.StateKey+")")
	fs.StringVar(&f.stateBucket, "state-bucket", setup.DefaultStateBucket, "S3 `bucket` of the state when --state is not given (millctl setup creates it)")
	fs.StringVar(&f.frequency, "frequency", c.Frequency, "time between run starts, a `frequency`: N followed by s (seconds), M (minutes), h (hours),\nd (days) or m (months); 0: one run only")
	fs.Int64Var(&f.MaxQueueSize, "max-queue-size", looping.DefaultMaxQueueSize, "stop (and resume next time) when the queue has this many visible `messages`")
	if c.BiteSize {
		fs.IntVar(&f.BiteSize, "bite-size", looping.DefaultBiteSize, "most `items` of one space queued per bite")
	}
	fs.IntVar(&f.InFlight, "sends-in-flight", looping.DefaultSendsInFlight, "most `batches` of 10 tasks being sent to the queue at once (1: one at a time)")
	fs.StringVar(&f.LeaseTable, "lease-table", lease.DefaultTable, "DynamoDB `table` of the producer lease: one invocation at a time (\""+NoLease+"\" or empty: an\nin-memory lease, for a single local process)")
	fs.DurationVar(&f.LeaseTTL, "lease-ttl", looping.DefaultLeaseTTL, "how long the lease outlives a crashed holder (renewed every third of it)")
	switch {
	case c.Database != "" && c.Runs:
		f.DatabaseURL = wiring.DatabaseURLFlag(fs, c.Database+" and the record of runs", "required")
	case c.Database != "":
		f.DatabaseURL = wiring.DatabaseURLFlag(fs, c.Database, "required")
	case c.Runs:
		// Not --database-url: a producer that needs no database does not
		// take the fleet's MILL_DATABASE_URL unasked.
		f.DatabaseURL = fs.String("runs-database-url", "", "PostgreSQL connection `URL` of the record of runs\n(postgres://user:pass@host:port/db?sslmode=disable); without it, runs are not recorded")
	}
	if c.Runs {
		f.Reports = wiring.ReportsFlags(fs)
	}
	if c.Filter {
		f.filter = defineFilter(fs)
	}
	f.Output = OutputFlags(fs)
	f.Schedule = ScheduleFlags(fs)
	f.Tracing = wiring.TracingFlag(fs)
	return f, c.Define(fs)
}

// parse parses and checks the command line, returning every problem as
// one UsageError.
func (c Command) parse(args []string, getenv func(string) string, stderr io.Writer) (*Flags, bit.Filter, Own, error) {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	f, own := c.define(fs)
	var filter bit.Filter
	if err := Parse(fs, args, getenv, stderr, c.Summary); err != nil {
		return nil, filter, own, err
	}
	errs := f.Output.Parse()
	var err error
	if f.Frequency, err = looping.ParseFrequency(f.frequency); err != nil {
		errs = append(errs, fmt.Errorf("--frequency (MILL_FREQUENCY): %w", err))
	} else if err := f.Schedule.Check(f.Frequency); err != nil {
		errs = append(errs, err)
	}
	if f.filter != nil {
		var ferrs []error
		filter, ferrs = f.filter.Load()
		errs = append(errs, ferrs...)
	}
	if f.MaxQueueSize <= 0 {
		errs = append(errs, fmt.Errorf("--max-queue-size %d: must be positive", f.MaxQueueSize))
	}
	if c.BiteSize && f.BiteSize <= 0 {
		errs = append(errs, fmt.Errorf("--bite-size %d: must be positive", f.BiteSize))
	}
	if f.InFlight < 1 || f.InFlight > 64 {
		errs = append(errs, fmt.Errorf("--sends-in-flight %d: must be between 1 and 64", f.InFlight))
	}
	if f.State, err = wiring.StateLocation(f.State, f.stateBucket, c.StateKey); err != nil {
		errs = append(errs, err)
	}
	if err := f.Config.Check(); err != nil {
		errs = append(errs, err)
	}
	if c.Database != "" && *f.DatabaseURL == "" {
		errs = append(errs, wiring.DatabaseURLRequired(c.DatabaseWhy))
	}
	if own.Check != nil {
		errs = append(errs, own.Check()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, filter, own, Usage(err)
	}
	return f, filter, own, nil
}

// Run is one invocation of the command: it parses the command line (flags
// or their MILL_* variables), opens the registry, the database and the
// state, builds the producer (Command.Build), and runs the loop once: its
// summary goes to stdout, logs and progress to stderr.
func (c Command) Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, filter, own, err := c.parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	e := &Env{Flags: f, Filter: filter, Logger: f.Output.Logger(stderr)}
	if e.AWS, err = awsconfig.Load(ctx, awsconfig.Options{Logger: e.Logger, Getenv: getenv}); err != nil {
		return err
	}
	var stopTracing func()
	if e.Tracing, stopTracing, err = f.Tracing.Install(ctx, c.Name, getenv, e.Logger, e.AWS, nil); err != nil {
		return err
	}
	defer stopTracing()
	e.S3 = e.AWS.S3()
	if e.Registry, err = f.Config.Registry(ctx, e.S3); err != nil {
		return err
	}
	e.Opener = wiring.NewOpener(e.Registry, &e.AWS.AWS, e.AWS.EndpointOverride)
	if f.DatabaseURL != nil && *f.DatabaseURL != "" {
		if e.DB, err = milldb.Open(ctx, *f.DatabaseURL, milldb.Config{Tracer: e.Tracing.PGX()}); err != nil {
			return err
		}
		defer e.DB.Close()
	}
	state, err := openState(f.State, e.S3)
	if err != nil {
		return err
	}
	lc, err := own.Build(ctx, e)
	if err != nil {
		return err
	}
	if c.Runs && e.DB != nil {
		lc.Runs = &runs.Recorder{Store: pgruns.New(e.DB.Pool), Logger: e.Logger,
			Reports: s3reportstore.Store{Client: e.S3, Bucket: f.Reports.Bucket, Prefix: f.Reports.Prefix}}
	}
	lc.State, lc.Lease, lc.LeaseTTL = state, newLease(e.AWS, f.LeaseTable), f.LeaseTTL
	lc.Frequency, lc.MaxQueueSize, lc.BiteSize, lc.Logger = f.Frequency, f.MaxQueueSize, f.BiteSize, e.Logger
	lc.SendsInFlight = f.InFlight
	return run(ctx, lc, f.Output, f.Schedule, e.AWS, stdout, stderr)
}
