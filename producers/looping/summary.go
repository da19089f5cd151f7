package looping

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/lease"
)

// StopReason says why an invocation stopped.
type StopReason string

// Stop reasons. Only StopError comes with a non-nil error from Run.
const (
	StopDone      StopReason = "done"       // the run is complete
	StopQueueFull StopReason = "queue full" // resumes at the next invocation
	StopNotDue    StopReason = "not due"    // the next run is not due yet
	StopLeaseHeld StopReason = "lease held" // another invocation is running
	StopError     StopReason = "error"
)

// Summary describes one invocation.
type Summary struct {
	Kind    string
	Stopped StopReason
	// RunID and RunStart of the run this invocation worked on (or, when
	// not due, of the last run).
	RunID    string
	RunStart time.Time
	// NextRun is when the next run is due (zero: looping disabled, or not
	// known because the invocation stopped early).
	NextRun time.Time
	// Holder is who holds the lease, when Stopped is StopLeaseHeld.
	Holder lease.Holder
	// Depth is the visible queue depth that stopped the invocation, when
	// Stopped is StopQueueFull.
	Depth int64
	// Queued counts the tasks this invocation sent, by type and account;
	// RunQueued those the whole run has sent so far.
	Queued    Counts
	RunQueued Counts
	// Bites taken by this invocation (delete steps included).
	Bites                     int
	MorselsDone, MorselsTotal int
	Err                       error
	Started, Ended            time.Time
}

// String is a one-line description, e.g. "dupproducer: queue full after
// 12 bites, 12000 tasks queued; 3/10 morsels done".
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.Kind, s.Stopped)
	switch s.Stopped {
	case StopLeaseHeld:
		fmt.Fprintf(&b, " by %s", s.Holder)
		return b.String()
	case StopNotDue:
		if s.NextRun.IsZero() {
			b.WriteString(" (looping disabled: frequency 0)")
		} else {
			fmt.Fprintf(&b, " until %s", s.NextRun.UTC().Format(time.RFC3339))
		}
		return b.String()
	case StopQueueFull:
		fmt.Fprintf(&b, " (%d visible)", s.Depth)
	case StopError:
		fmt.Fprintf(&b, " (%v)", s.Err)
	}
	fmt.Fprintf(&b, " after %d bites, %d tasks queued; %d/%d morsels done", s.Bites, s.Queued.Total(), s.MorselsDone, s.MorselsTotal)
	if s.Stopped == StopDone && !s.NextRun.IsZero() {
		fmt.Fprintf(&b, "; next run due %s", s.NextRun.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Write prints the summary for an operator: the String line, then the
// tasks queued by type and account.
func (s Summary) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString(s.String())
	b.WriteByte('\n')
	if s.Stopped != StopLeaseHeld && s.Stopped != StopNotDue {
		fmt.Fprintf(&b, "  run %s started %s, elapsed %s\n", s.RunID, s.RunStart.UTC().Format(time.RFC3339), s.Ended.Sub(s.Started).Round(time.Millisecond))
		writeCounts(&b, "queued by this invocation", s.Queued)
		writeCounts(&b, "queued by the run so far", s.RunQueued)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCounts(b *strings.Builder, title string, c Counts) {
	if c.Total() == 0 {
		return
	}
	fmt.Fprintf(b, "  %s: %d\n", title, c.Total())
	for _, typ := range slices.Sorted(maps.Keys(c)) {
		for _, acct := range slices.Sorted(maps.Keys(c[typ])) {
			name := acct
			if name == "" {
				name = "(no account)"
			}
			fmt.Fprintf(b, "    %-12s %-24s %d\n", typ, name, c[typ][acct])
		}
	}
}

func (s Summary) logLevel() slog.Level {
	if s.Stopped == StopError {
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (s Summary) logAttrs() []slog.Attr {
	a := []slog.Attr{slog.String("stopped", string(s.Stopped))}
	if s.RunID != "" {
		a = append(a, slog.String("run_id", s.RunID))
	}
	switch s.Stopped {
	case StopLeaseHeld:
		return append(a, slog.String("holder", s.Holder.String()))
	case StopNotDue:
		return append(a, slog.Time("next_run", s.NextRun))
	case StopQueueFull:
		a = append(a, slog.Int64("visible", s.Depth))
	case StopError:
		a = append(a, slog.Any("error", s.Err))
	}
	a = append(a,
		slog.Int("bites", s.Bites),
		slog.Int64("tasks", s.Queued.Total()),
		slog.Int("morsels_done", s.MorselsDone),
		slog.Int("morsels_total", s.MorselsTotal),
		slog.Duration("elapsed", s.Ended.Sub(s.Started)))
	var by []any
	for _, typ := range slices.Sorted(maps.Keys(s.Queued)) {
		for _, acct := range slices.Sorted(maps.Keys(s.Queued[typ])) {
			by = append(by, slog.Int64(typ+"/"+acct, s.Queued[typ][acct]))
		}
	}
	if len(by) > 0 {
		a = append(a, slog.Group("queued", by...))
	}
	if !s.NextRun.IsZero() {
		a = append(a, slog.Time("next_run", s.NextRun))
	}
	return a
}
