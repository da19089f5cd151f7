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
	"github.com/millfleet/mill/pkg/notify"
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
	// Skipped are the run's morsels the producer left out, with why
	// (counted in MorselsDone).
	Skipped []Skip
	// Failed are the run's morsels given up so far (Morsel.Failed), with
	// why (counted in MorselsDone); NewlyFailed counts those this
	// invocation gave up. The next run retries them.
	Failed         []Skip
	NewlyFailed    int
	Err            error
	Started, Ended time.Time
}

// Skip is a morsel left out of a run, and why (Morsel.Skipped).
type Skip struct{ ID, Reason string }

// MaxSkipsShown bounds the skipped morsels Write lists one by one.
const MaxSkipsShown = 20

// skipped lists the morsels left out of the run, with Morsel.Skipped.
func skipped(ms []Morsel) []Skip { return morselsWith(ms, func(m Morsel) string { return m.Skipped }) }

// failed lists the morsels given up, with Morsel.Failed.
func failed(ms []Morsel) []Skip { return morselsWith(ms, func(m Morsel) string { return m.Failed }) }

// morselsWith lists the morsels whose reason is not empty, with it.
func morselsWith(ms []Morsel, reason func(Morsel) string) []Skip {
	var out []Skip
	for _, m := range ms {
		if r := reason(m); r != "" {
			out = append(out, Skip{ID: m.ID, Reason: r})
		}
	}
	return out
}

// HasFailures reports whether the invocation gave up morsels, or completed
// a run in which some were given up: what the operator must hear about
// (the producers' commands exit with status 3).
func (s Summary) HasFailures() bool {
	return s.NewlyFailed > 0 || (s.Stopped == StopDone && len(s.Failed) > 0)
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
	if len(s.Skipped) > 0 {
		fmt.Fprintf(&b, " (%d skipped)", len(s.Skipped))
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(&b, " (%d failed, retried next run)", len(s.Failed))
	}
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
		if s.RunID == "" {
			fmt.Fprintf(&b, "  no run started, elapsed %s\n", s.Ended.Sub(s.Started).Round(time.Millisecond))
		} else {
			fmt.Fprintf(&b, "  run %s started %s, elapsed %s\n", s.RunID, s.RunStart.UTC().Format(time.RFC3339), s.Ended.Sub(s.Started).Round(time.Millisecond))
		}
		writeCounts(&b, "queued by this invocation", s.Queued)
		writeCounts(&b, "queued by the run so far", s.RunQueued)
		writeSkips(&b, "skipped by the run", s.Skipped)
		writeSkips(&b, "failed in the run (retried next run)", s.Failed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSkips(b *strings.Builder, title string, skips []Skip) {
	if len(skips) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s: %d\n", title, len(skips))
	for i, sk := range skips {
		if i == MaxSkipsShown {
			fmt.Fprintf(b, "    … and %d more (the state lists them all)\n", len(skips)-i)
			break
		}
		fmt.Fprintf(b, "    %s: %s\n", sk.ID, sk.Reason)
	}
}

// Event is the notification of a completed run, a failed invocation, or
// an invocation that gave up morsels: the summary as its body; attributes
// producer, run_id and result ("done", "error", or why the invocation
// stopped).
func (s Summary) Event() notify.Event {
	typ, what := notify.EventRunCompleted, "completed"
	switch {
	case s.Stopped == StopError:
		typ, what = notify.EventRunFailed, "failed"
	case s.Stopped != StopDone && s.NewlyFailed > 0:
		typ, what = notify.EventMorselsFailed, fmt.Sprintf("gave up %d morsels", s.NewlyFailed)
	}
	subject := fmt.Sprintf("Mill: %s run %s %s", s.Kind, s.RunID, what)
	if s.RunID == "" { // no run to name: the invocation failed before one started
		subject = fmt.Sprintf("Mill: %s invocation %s before a run started", s.Kind, what)
	}
	if s.Stopped == StopDone {
		subject += fmt.Sprintf(": %d tasks, %d morsels", s.RunQueued.Total(), s.MorselsTotal)
		if len(s.Skipped) > 0 {
			subject += fmt.Sprintf(" (%d skipped)", len(s.Skipped))
		}
		if len(s.Failed) > 0 {
			subject += fmt.Sprintf(", %d FAILED", len(s.Failed))
		}
	}
	var b strings.Builder
	switch {
	case s.Stopped == StopError && s.RunID == "":
		b.WriteString("A producer invocation stopped on an error before a run started; the next invocation tries again.\n\n")
	case s.Stopped == StopError:
		b.WriteString("A producer invocation stopped on an error; the next invocation resumes the run from its last saved bite.\n\n")
	case len(s.Failed) > 0:
		b.WriteString("Some morsels failed and were left out of this run (listed below with their errors); every other morsel is swept, and the next run retries them.\n\n")
	}
	_ = s.Write(&b)
	attrs := map[string]string{notify.AttrProducer: s.Kind, notify.AttrResult: string(s.Stopped)}
	if s.RunID != "" {
		attrs[notify.AttrRunID] = s.RunID
	}
	return notify.Event{Type: typ, Subject: subject, Body: b.String(), Time: s.Ended, Attributes: attrs}
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
	if s.HasFailures() {
		return slog.LevelWarn
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
		slog.Int("morsels_skipped", len(s.Skipped)),
		slog.Int("morsels_failed", len(s.Failed)),
		slog.Int("morsels_failed_now", s.NewlyFailed),
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
