package workman

import (
	"context"

	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/task"
)

// Outcome is what Workman did with a task after running it.
type Outcome string

// Outcomes an OutcomeObserver hears of.
const (
	// OutcomeDone: the task succeeded; its message is being deleted.
	OutcomeDone Outcome = "done"
	// OutcomeRetry: the task failed and a retry (attempts+1) was sent.
	OutcomeRetry Outcome = "failed"
	// OutcomeDeadLettered: the task went to the dead-letter queue.
	OutcomeDeadLettered Outcome = "dead"
	// OutcomeContinued: the task succeeded by queueing a continuation
	// of itself (processors.Continue; the bit report waiting for
	// results): its message is deleted, its work is not done.
	OutcomeContinued Outcome = "continued"
)

func doneOrContinued(continued bool) Outcome {
	if continued {
		return OutcomeContinued
	}
	return OutcomeDone
}

// TaskOutcome is one outcome of one decoded task.
type TaskOutcome struct {
	Task    *task.Task
	Outcome Outcome
	// Reason is the dead-letter reason (Reason…), Err the handler's error
	// (nil for OutcomeDone); Attempts counts this one.
	Reason   string
	Err      error
	Attempts int
	// Requests are the AWS requests this attempt made, by "service Op",
	// when the observer counts them (RequestCounter); nil otherwise.
	Requests map[string]int64
}

// OutcomeObserver is told the outcome of every decoded task
// (Config.Outcomes; the record of runs, pkg/runs). For OutcomeDone,
// OutcomeContinued and OutcomeDeadLettered it is called before the message is deleted, so a
// crash in between redelivers the message rather than loses the outcome;
// an error leaves the message to be redelivered (the observer must be
// idempotent). An error for OutcomeRetry is only logged: the retry is
// already queued. Called from the workers: it must be safe for concurrent
// use.
type OutcomeObserver interface {
	TaskOutcome(ctx context.Context, o TaskOutcome) error
}

// RequestCounter is an OutcomeObserver that is told the AWS requests of
// the tasks it counts: for a task t it asks of, Workman runs the attempt
// with a pricing.Counter in its context (counted by pkg/awsconfig's
// middleware in every AWS client) and hands the counts on with the
// attempt's outcome (TaskOutcome.Requests). Workman's own requests (the
// receive, delete, visibility changes, a retry's or dead letter's send)
// are not the task's and are not counted.
type RequestCounter interface {
	CountsRequests(t *task.Task) bool
}

// countRequests returns ctx with a counter for j's attempt at t when the
// outcome observer counts t's requests.
func (m *Manager) countRequests(ctx context.Context, j *job, t *task.Task) context.Context {
	if rc, ok := m.cfg.Outcomes.(RequestCounter); ok && rc.CountsRequests(t) {
		ctx, j.requests = pricing.WithCounter(ctx)
	}
	return ctx
}

// observe tells Config.Outcomes of o, reporting false when the message was
// abandoned because the observer failed.
func (m *Manager) observe(svc context.Context, j *job, o TaskOutcome) bool {
	if m.cfg.Outcomes == nil || o.Task == nil {
		return true
	}
	o.Requests = j.requests.Counts()
	ctx, cancel := context.WithTimeout(svc, m.cfg.CallTimeout)
	defer cancel()
	err := m.cfg.Outcomes.TaskOutcome(ctx, o)
	if err == nil {
		return true
	}
	log := j.qs.log.With(o.Task.LogAttrs()...)
	if o.Outcome == OutcomeRetry {
		log.Warn("could not record the task's failed attempt", "error", err)
		return true
	}
	log.Error("could not record the task's outcome; the message will be redelivered", "outcome", string(o.Outcome), "error", err)
	m.abandon(j, err)
	return false
}
