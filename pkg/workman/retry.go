package workman

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// RetryDelay is the delay before attempt attempts+1 of a task that failed
// with err: what processors.RetryAfter asked for, else base·2^attempts;
// never more than max.
func RetryDelay(attempts int, err error, base, max time.Duration) time.Duration {
	if d, ok := processors.RetryDelay(err); ok {
		return min(d, max)
	}
	d := base
	for i := 0; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// retryTask sends a copy with attempts+1 after a delay, then deletes the
// original. Send first: a crash between the two duplicates the task, it
// never loses it.
func (m *Manager) retryTask(svc context.Context, j *job, t *task.Task, herr error, log *slog.Logger) {
	nt := t.Clone()
	nt.Attempts = t.Attempts + 1
	body, err := task.Encode(nt, m.cfg.Format)
	if err != nil {
		m.deadLetter(svc, j, t, ReasonPermanent, fmt.Errorf("re-encode for retry: %w (after: %v)", err, herr), nt.Attempts)
		return
	}
	delay := RetryDelay(t.Attempts, herr, m.cfg.RetryBase, m.cfg.RetryMax)
	err = m.retry(svc, func() error {
		cctx, cancel := context.WithTimeout(svc, m.cfg.CallTimeout)
		defer cancel()
		return j.qs.q.Send(cctx, queue.SendEntry{Body: body, Delay: delay, Group: queue.GroupFor(nt.Get(task.KeyAccount))})
	})
	if err != nil {
		log.Error("task failed and its retry could not be sent; the message will be redelivered", "error", herr, "send_error", err)
		m.abandon(j, err)
		return
	}
	m.wakes.at(j.qs.index, m.clk.Now().Add(delay))
	log.Info("task failed; retry scheduled", "error", herr.Error(), "retry_in", delay, "next_attempt", nt.Attempts)
	m.observe(svc, j, TaskOutcome{Task: t, Outcome: OutcomeRetry, Err: herr, Attempts: nt.Attempts})
	m.succeed(j)
}
