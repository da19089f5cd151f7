package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// Redrive says what to redrive, and how.
type Redrive struct {
	Filter Filter
	// KeepAttempts sends the tasks with their attempts as they were;
	// otherwise attempts are reset to 0 (in the task's own format).
	KeepAttempts bool
	// DryRun changes nothing: Each is called for what would be sent.
	DryRun bool
	// Rate is the most messages sent per second (0 = no limit).
	Rate float64
	// To is the queue (key or full name) for a message whose own source
	// queue is missing or not one of Mill's work queues; empty: such a
	// message is skipped (no source) or refused (not Mill's).
	To string
	// Each, when set, is called with every entry redriven (or, in a dry
	// run, that would be) and its target queue.
	Each func(e *Entry, target string)
	// Progress, when set, is called after each batch with the counts so
	// far.
	Progress func(RedriveStats)
}

// RedriveStats counts a redrive's messages.
type RedriveStats struct {
	// Redriven were sent back and deleted here (or would be, in a dry
	// run); Failed were not (the error says why; they stay); Skipped
	// have no source queue and no To; NotMatching did not match the
	// filter; Looked is every message the scan looked at.
	Redriven, Failed, Skipped, NotMatching, Looked int
}

// WorkQueue reports whether name is one of Mill's work queues under the
// inspector's prefix (a redrive target a dead letter may name).
func (in *Inspector) WorkQueue(name string) bool {
	for _, k := range queue.AllKeys {
		if k != queue.KeyDeadLetter && name == queue.Name(in.cfg.Prefix, k) {
			return true
		}
	}
	return false
}

// queueName returns the full name of a queue given by key or name.
func (in *Inspector) queueName(keyOrName string) string {
	if keyOrName == "" || strings.HasPrefix(keyOrName, in.cfg.Prefix) {
		return keyOrName
	}
	return queue.Name(in.cfg.Prefix, keyOrName)
}

// Target is where a redrive with To to (a key or full name; may be empty)
// sends e: its source queue when that is one of Mill's work queues, else
// to; "" when e is skipped (no source queue, no to). It fails for an entry
// a redrive refuses: a claim-check reference not resolved, or a source
// queue that is not Mill's and no to.
func (in *Inspector) Target(e *Entry, to string) (string, error) {
	if e.Unresolved != nil {
		return "", fmt.Errorf("not redriven: %w", e.Unresolved)
	}
	src := e.Letter.SourceQueue
	if e.Foreign {
		src = ""
	}
	if src != "" && !in.WorkQueue(src) && to == "" {
		return "", fmt.Errorf("message %s: source queue %q is not one of Mill's work queues (prefix %q): not redriven (name a target with To, --to)", e.Message.ID, src, in.cfg.Prefix)
	}
	if src != "" && in.WorkQueue(src) {
		return src, nil
	}
	return in.queueName(to), nil
}

// Redrive sends each matching message back to the queue it failed on — the
// original body, attempts reset unless KeepAttempts — and only then deletes
// it here: a crash in between duplicates a task, it never loses one. A
// claim-checked message whose blob could not be read is not redriven
// (sending the reference alone would only make an undecodable task); it
// stays. The error joins what failed.
func (in *Inspector) Redrive(ctx context.Context, r Redrive) (RedriveStats, error) {
	if r.Rate < 0 {
		return RedriveStats{}, fmt.Errorf("deadletter: redrive rate %v: must not be negative", r.Rate)
	}
	if !r.DryRun && in.cfg.Open == nil {
		return RedriveStats{}, errors.New("deadletter: redrive needs Config.Open")
	}
	rd := &redriver{in: in, r: r, scan: in.Scan(), targets: map[string]queue.Queue{}, start: in.cfg.Clock.Now()}
	defer rd.scan.Close(ctx)
	var st RedriveStats
	var errs []error
	notMatching, err := in.each(ctx, rd.scan, r.Filter, func(es []*Entry) (bool, error) {
		byTarget := map[string][]*Entry{}
		var order []string
		for _, e := range es {
			target, err := in.Target(e, r.To)
			if err != nil {
				st.Failed++
				errs = append(errs, err)
				continue
			}
			if target == "" {
				st.Skipped++
				in.cfg.Logger.Warn("deadletter: skipped: no source queue (name one with To, --to)", "id", e.Message.ID)
				continue
			}
			if _, ok := byTarget[target]; !ok {
				order = append(order, target)
			}
			byTarget[target] = append(byTarget[target], e)
		}
		for _, target := range order {
			sent, err := rd.send(ctx, target, byTarget[target])
			st.Redriven += len(sent)
			st.Failed += len(byTarget[target]) - len(sent)
			if err != nil {
				errs = append(errs, err)
			}
			if r.Each != nil {
				for _, e := range sent {
					r.Each(e, target)
				}
			}
		}
		if r.Progress != nil {
			p := st
			p.Looked = rd.scan.Looked()
			r.Progress(p)
		}
		return false, ctx.Err()
	})
	st.NotMatching, st.Looked = notMatching, rd.scan.Looked()
	return st, errors.Join(append(errs, err)...)
}

// redriver is one redrive's state.
type redriver struct {
	in      *Inspector
	r       Redrive
	scan    *Scan
	targets map[string]queue.Queue
	start   time.Time
	sent    int
}

// send puts the original bodies on target, then deletes from the
// dead-letter queue those that were sent, and returns them.
func (rd *redriver) send(ctx context.Context, target string, es []*Entry) ([]*Entry, error) {
	if rd.r.DryRun {
		return es, nil
	}
	q, ok := rd.targets[target]
	if !ok {
		var err error
		if q, err = rd.in.cfg.Open(ctx, target); err != nil {
			return nil, fmt.Errorf("deadletter: open %s: %w", target, err)
		}
		rd.targets[target] = q
	}
	entries := make([]queue.SendEntry, len(es))
	for i, e := range es {
		entries[i] = queue.SendEntry{Body: body(e.Letter.Body, rd.r.KeepAttempts), Group: group(e.Letter.Body)}
	}
	if err := rd.wait(ctx, len(entries)); err != nil {
		return nil, err
	}
	sendErr := q.Send(ctx, entries...)
	failed := queue.FailedIndexes(sendErr, len(entries))
	var sent []*Entry
	for i, e := range es {
		if !slices.Contains(failed, i) {
			sent = append(sent, e)
		}
	}
	rd.sent += len(sent)
	if len(sent) == 0 {
		return nil, fmt.Errorf("send to %s: %w", target, sendErr)
	}
	// Sent: now delete. A failed delete leaves a duplicate on the
	// dead-letter queue, never a loss.
	delErr := rd.scan.Delete(ctx, sent...)
	if delErr != nil {
		delErr = fmt.Errorf("sent to %s but not deleted from the dead-letter queue (they will show up again): %w", target, delErr)
	}
	if sendErr != nil {
		sendErr = fmt.Errorf("send to %s: %w", target, sendErr)
	}
	return sent, errors.Join(sendErr, delErr)
}

// body is what a redrive sends: the original body, with attempts reset to
// 0 in the task's own format unless keep (or it is not a task).
func body(b []byte, keep bool) []byte {
	if keep {
		return b
	}
	t, err := task.Decode(b)
	if err != nil || t.Attempts == 0 {
		return b
	}
	t.Attempts = 0
	nb, err := task.Encode(t, task.DetectFormat(b))
	if err != nil {
		return b
	}
	return nb
}

// group is the queue group of the task in b ("" if b is not a task).
func group(b []byte) string {
	t, err := task.Decode(b)
	if err != nil {
		return ""
	}
	return queue.GroupFor(t.Get(task.KeyAccount))
}

// wait holds back n more sends until the rate allows them.
func (rd *redriver) wait(ctx context.Context, n int) error {
	if rd.r.Rate <= 0 {
		return nil
	}
	due := rd.start.Add(time.Duration(float64(rd.sent+n) / rd.r.Rate * float64(time.Second)))
	return rd.scan.wait(ctx, due.Sub(rd.in.cfg.Clock.Now()))
}

// Summary says what a redrive did (or, in a dry run, would do).
func (s RedriveStats) Summary(dryRun bool) string {
	verb := "redriven"
	if dryRun {
		verb = "would be redriven"
	}
	return fmt.Sprintf("%d %s, %d failed, %d skipped (no source queue), %d not matching", s.Redriven, verb, s.Failed, s.Skipped, s.NotMatching)
}
