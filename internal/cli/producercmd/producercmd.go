// Package producercmd is the one command of the looping producers
// (dupproducer, bitproducer, statsproducer): each main fills in a Command
// (its name, --help summary, state key, default frequency, which optional
// flag groups it has, its own flags and how it builds its producer and
// queue) and Command.Run does the rest the same way for all three
// (command.go): the common flags and their checks (configuration source,
// queue prefix, state, frequency, queue size, bite size, lease, database,
// filter files --include/--exclude, the output flags --progress,
// --wire-format, --log-level, the schedule --start-at and
// --notify-topic-arn), the usage error and exit status, and the end of
// every run: the registry, the database, the state, the lease and the loop
// itself (loop.go). Command.Main gives the process a soft memory limit,
// DefaultMemoryLimit, unless GOMEMLIMIT sets one (memlimit.go).
package producercmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/millfleet/mill/internal/cli/envflag"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// Schedule is --start-at and --notify-topic-arn.
type Schedule struct {
	startAt     looping.StartAt
	notifyTopic *string
}

// ScheduleFlags defines --start-at and --notify-topic-arn on fs.
func ScheduleFlags(fs *flag.FlagSet) *Schedule {
	s := &Schedule{}
	fs.TextVar(&s.startAt, "start-at", looping.StartAt{}, "time of day runs begin at: `HH:MM` (UTC) or \"HH:MM Area/City\"; a due run waits for it and\n"+
		"begins within 4h after it, else the next day (needs a frequency in days or months; empty: at once)")
	s.notifyTopic = wiring.NotifyFlag(fs)
	return s
}

// Check reports a start time with a frequency it cannot go with.
func (s *Schedule) Check(f looping.Frequency) error {
	if !s.startAt.IsZero() && f.N > 0 && f.Unit != looping.Days && f.Unit != looping.Months {
		return fmt.Errorf("--start-at %s needs a --frequency in days or months, not %s", s.startAt, f)
	}
	return nil
}

// Apply sets the loop's start time and notifier (SNS on the topic, or the
// log).
func (s *Schedule) Apply(c *looping.Config, aws *awsconfig.Config, logger *slog.Logger) error {
	c.StartAt = s.startAt
	n, err := wiring.Notifier(aws, *s.notifyTopic, logger)
	if err != nil {
		return err
	}
	c.Notifier = n
	return nil
}

// ParseProgress reads --progress: auto, bar, log or off.
func ParseProgress(s string) (looping.ProgressMode, error) {
	switch s {
	case "auto":
		return looping.ProgressAuto, nil
	case "bar":
		return looping.ProgressBar, nil
	case "log":
		return looping.ProgressLog, nil
	case "off":
		return looping.ProgressOff, nil
	}
	return 0, fmt.Errorf("--progress %q: want auto, bar, log or off", s)
}

// UsageError marks a bad command line (exit status 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a UsageError.
func Usage(err error) error { return UsageError{err} }

// FailuresError is what Run returns for an invocation whose summary has
// failures (looping.Summary.HasFailures): the state is saved and the next
// invocation goes on as usual, but the exit status (3) tells the scheduler
// and the operator that part of the sweep was given up.
type FailuresError struct{ Failed, NewlyFailed int }

func (e FailuresError) Error() string {
	return fmt.Sprintf("%d morsels of the run failed (%d given up by this invocation); the rest was swept, the summary lists them, and the next run retries them",
		e.Failed, e.NewlyFailed)
}

// ExitCode is the producers' exit status for what run returned: 0 for
// success and --help, 2 for a UsageError, 3 for a FailuresError, 1 for
// anything else; an error is written to stderr after the command's name
// (explained, wiring.Explain).
func ExitCode(name string, err error, stderr io.Writer) int {
	var ue UsageError
	var fe FailuresError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, name+":", err)
		return 2
	case errors.As(err, &fe):
		fmt.Fprintln(stderr, name+":", err)
		return 3
	default:
		fmt.Fprintln(stderr, name+":", wiring.Explain(err))
		return 1
	}
}

// Output is --progress, --wire-format and --log-level.
type Output struct {
	progress, level string
	format          *wiring.WireFormat

	Progress looping.ProgressMode // set by Parse
	Format   task.Format          // set by Parse
	Level    slog.Level           // set by Parse
}

// OutputFlags defines --progress, --wire-format (wiring.WireFormatVar)
// and --log-level on fs.
func OutputFlags(fs *flag.FlagSet) *Output {
	o := &Output{}
	fs.StringVar(&o.progress, "progress", "auto", "progress display: auto (a bar on a terminal, log lines otherwise), bar, log or off")
	o.format = wiring.WireFormatFlag(fs)
	fs.StringVar(&o.level, "log-level", "info", "log `level`: debug, info, warn or error")
	return o
}

// Parse reads the three flags, returning every problem.
func (o *Output) Parse() []error {
	var errs []error
	var err error
	if o.Progress, err = ParseProgress(o.progress); err != nil {
		errs = append(errs, err)
	}
	if o.Format, err = o.format.Parse(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Level.UnmarshalText([]byte(o.level)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	return errs
}

// Logger is the producers' JSON logger on w at the parsed level.
func (o *Output) Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: o.Level}))
}

// filterFlags is --include and --exclude: the filter files of bitproducer
// and statsproducer (bit.LoadFilter; Command.Filter).
type filterFlags struct{ include, exclude string }

// defineFilter defines --include and --exclude on fs.
func defineFilter(fs *flag.FlagSet) *filterFlags {
	f := &filterFlags{}
	fs.StringVar(&f.include, "include", "", "inclusion filter `file` (default: every space)")
	fs.StringVar(&f.exclude, "exclude", "", "exclusion filter `file`")
	return f
}

// Load reads the filter files given, returning every problem.
func (f *filterFlags) Load() (bit.Filter, []error) {
	var out bit.Filter
	var errs []error
	for _, x := range []struct {
		path string
		into *bit.Patterns
	}{{f.include, &out.Include}, {f.exclude, &out.Exclude}} {
		if x.path == "" {
			continue
		}
		p, err := bit.LoadFilter(x.path)
		if err != nil {
			errs = append(errs, err)
		}
		*x.into = p
	}
	return out, errs
}

// Parse parses a producer's command line (flags or their MILL_*
// variables, see envflag) with summary as the --help text: --help is
// flag.ErrHelp, a bad flag or a stray argument a UsageError.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer, summary string) error {
	fs.SetOutput(stderr)
	fs.Usage = func() { envflag.Usage(fs, stderr, summary) }
	if err := envflag.Parse(fs, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return Usage(err)
	}
	if fs.NArg() > 0 {
		return Usage(fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	return nil
}
