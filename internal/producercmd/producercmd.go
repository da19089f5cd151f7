// Package producercmd holds what the looping producers' commands
// (dupproducer, bitproducer, statsproducer) share beyond the looping
// framework: the schedule and notification flags (--start-at,
// --notify-topic-arn) and the progress flag's values.
package producercmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
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

// ExitCode is the producers' exit status for what run returned: 0 for
// success and --help, 2 for a UsageError, 1 for anything else; an error is
// written to stderr after the command's name (explained, wiring.Explain).
func ExitCode(name string, err error, stderr io.Writer) int {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, name+":", err)
		return 2
	default:
		fmt.Fprintln(stderr, name+":", wiring.Explain(err))
		return 1
	}
}
