package workman

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/millfleet/mill/pkg/aimd"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"go.opentelemetry.io/otel/trace"
)

// Manager receives tasks from its queues and runs them. Create it with New
// and call Run once.
type Manager struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	obs     Observer
	handler processors.Handler
	queues  []*qstate
	ext     *extender
	wakes   *waker
	circ    *circuits

	started  atomic.Bool
	ready    atomic.Bool
	stopping atomic.Bool

	mu      sync.Mutex
	running map[*job]struct{} // jobs a worker is running
	stopped chan struct{}     // closed when Run returns
}

// qstate is one work queue and what the manager knows of it.
type qstate struct {
	q     queue.Queue
	index int           // in Config.Queues
	vt    time.Duration // visibility timeout
	// hangUpSafe: a long poll may be cancelled at shutdown
	// (queue.SafeToHangUp).
	hangUpSafe bool
	log        *slog.Logger
	del        *deleter
}

// job is one received message on its way through the manager.
type job struct {
	qs      *qstate
	msg     *queue.Message
	item    *tracked
	settled atomic.Bool // a disposition was taken (exactly one is)
	tenant  string      // the task's account (tenantOf)
	// requests counts the AWS requests of the task's attempt, when the
	// outcome observer counts them (countRequests).
	requests *pricing.Counter
}

// New validates cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg: cfg, clk: cfg.Clock, log: cfg.Logger.With("worker", cfg.WorkerID), obs: cfg.Observer,
		running: map[*job]struct{}{},
		stopped: make(chan struct{}),
	}
	// Recover is outermost so a panic anywhere in the chain is a failure,
	// whatever middleware the caller composed.
	m.handler = processors.Chain(cfg.Handler, processors.Recover(), processors.Timeout(cfg.TaskTimeouts, cfg.DefaultTaskTimeout))
	m.ext = newExtender(m)
	m.wakes = newWaker(m)
	m.circ = newCircuits(m)
	for _, q := range cfg.Queues {
		qs := &qstate{q: q, index: len(m.queues), log: m.log.With("queue", q.Name()), hangUpSafe: queue.SafeToHangUp(q)}
		qs.del = newDeleter(m, qs)
		m.queues = append(m.queues, qs)
	}
	return m, nil
}

// Ready reports whether the manager is serving: every queue has answered
// (its visibility timeout was read) and shutdown has not begun. It backs
// /readyz.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Outages lists the dependencies whose circuit is open on this manager
// (for the fleet registry's heartbeat), by dependency.
func (m *Manager) Outages() []Outage { return m.circ.outages() }

// Stopped is closed when Run has returned.
func (m *Manager) Stopped() <-chan struct{} { return m.stopped }

// Run receives and runs tasks until ctx ends, then shuts down gracefully
// (see the package documentation) and returns nil. It returns an error
// only when it cannot start: a queue that does not answer, or a second
// call.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("workman: Run called twice")
	}
	defer close(m.stopped)
	// Every queue must answer before anything is received; asked all at
	// once, so six queues start as soon as one.
	errs := make([]error, len(m.queues)+1)
	var asked sync.WaitGroup
	for i, qs := range m.queues {
		asked.Go(func() {
			vt, err := qs.q.VisibilityTimeout(ctx)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("workman: queue %s: %w", qs.q.Name(), err)
			case vt < 2*time.Second:
				errs[i] = fmt.Errorf("workman: queue %s: visibility timeout %s is too short to extend (need at least 2s)", qs.q.Name(), vt)
			default:
				qs.vt = vt
			}
		})
	}
	asked.Go(func() {
		if _, err := m.cfg.DeadLetter.VisibilityTimeout(ctx); err != nil {
			errs[len(m.queues)] = fmt.Errorf("workman: dead-letter queue %s: %w", m.cfg.DeadLetter.Name(), err)
		}
	})
	asked.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// svc carries the manager's own calls (extensions, deletes, sends,
	// releases); it outlives ctx so shutdown can finish them. hard is the
	// parent of every task's context; it is cancelled when the grace
	// period ends.
	svc, svcCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer svcCancel()
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	var bg sync.WaitGroup
	bg.Go(func() { m.ext.run(svc) })
	m.circ.start(svc)
	for _, qs := range m.queues {
		bg.Go(func() { qs.del.run(svc) })
	}
	d := newDispatcher(m, svc)
	bg.Go(func() { m.wakes.run(svc, func(i int) { d.update(func(p *planner) { p.wake(i) }) }) })
	var workers sync.WaitGroup
	for range m.cfg.Workers {
		workers.Go(func() { d.work(svc, hard, ctx.Done()) })
	}
	m.ready.Store(true)
	m.log.Info("workman started", "queues", m.queueNames(), "workers", m.cfg.Workers)

	// The grace period counts from the moment shutdown begins: the long
	// polls in flight then are waited for (dispatch.go), while the workers
	// go on with their tasks.
	// Shutdown begins when ctx ends. The grace period counts from then,
	// while the long polls in flight are waited for (dispatch.go) and the
	// workers go on with their tasks.
	workersDone := make(chan struct{})
	go func() { workers.Wait(); close(workersDone) }()
	stopped := make(chan struct{})
	context.AfterFunc(ctx, func() {
		defer close(stopped)
		m.ready.Store(false)
		m.stopping.Store(true)
		m.log.Info("workman stopping: no more receives", "grace_period", m.cfg.GracePeriod)
		grace := m.clk.NewTimer(m.cfg.GracePeriod)
		select {
		case <-workersDone:
			grace.Stop()
			return
		case <-grace.C():
		}
		m.mu.Lock()
		n := len(m.running)
		m.mu.Unlock()
		m.log.Warn("grace period over; cancelling running tasks", "tasks", n)
		hardCancel()
		hardStop := m.clk.NewTimer(m.cfg.HardStopTimeout)
		select {
		case <-workersDone:
			hardStop.Stop()
		case <-hardStop.C():
			m.releaseStuck(svc)
		}
	})
	var receivers sync.WaitGroup
	for i := range m.queues {
		receivers.Go(func() { d.receive(ctx, i) })
	}
	receivers.Wait() // only once ctx has ended
	d.stop()
	close(d.jobs)
	<-stopped
	hardCancel()
	for _, qs := range m.queues {
		qs.del.close()
	}
	for _, qs := range m.queues {
		qs.del.wait()
	}
	svcCancel()
	bg.Wait()
	m.circ.wait()
	m.log.Info("workman stopped")
	return nil
}

func (m *Manager) queueNames() []string {
	out := make([]string, len(m.queues))
	for i, qs := range m.queues {
		out[i] = qs.q.Name()
	}
	return out
}

// done ends a job's stay in the manager (its message may still await its
// batch delete).
func (m *Manager) done(j *job) {
	m.mu.Lock()
	delete(m.running, j)
	m.mu.Unlock()
	m.obs.InFlight(-1)
}

// releaseStuck releases the messages of tasks that did not return after
// cancellation; their goroutines are abandoned.
func (m *Manager) releaseStuck(ctx context.Context) {
	m.mu.Lock()
	byQueue := map[*qstate][]*job{}
	for j := range m.running {
		byQueue[j.qs] = append(byQueue[j.qs], j)
	}
	m.mu.Unlock()
	for qs, js := range byQueue {
		qs.log.Error("tasks ignored cancellation; releasing their messages", "tasks", len(js))
		m.releaseMany(ctx, qs, js, "task did not stop")
	}
}

func (m *Manager) release(ctx context.Context, j *job, why string) {
	m.releaseMany(ctx, j.qs, []*job{j}, why)
}

// releaseMany makes the messages of js visible again at once.
func (m *Manager) releaseMany(ctx context.Context, qs *qstate, js []*job, why string) {
	var msgs []*queue.Message
	var mine []*job
	for _, j := range js {
		if j.settled.CompareAndSwap(false, true) {
			m.ext.remove(j.item)
			msgs = append(msgs, j.msg)
			mine = append(mine, j)
		}
	}
	if len(msgs) == 0 {
		return
	}
	err := m.retry(ctx, func() error {
		cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
		defer cancel()
		return qs.q.Release(cctx, msgs...)
	})
	if err != nil {
		// Not lost: the message becomes visible when its timeout ends.
		qs.log.Warn("release failed; the messages reappear when their visibility timeout ends", "messages", len(msgs), "error", err)
	} else {
		qs.log.Info("released messages", "messages", len(msgs), "why", why)
	}
	for _, j := range mine {
		m.done(j)
	}
}

// retry runs op up to OperationAttempts times with exponential backoff,
// stopping early on errors retrying cannot fix.
func (m *Manager) retry(ctx context.Context, op func() error) error {
	d := m.cfg.OperationRetryBase
	var err error
	for i := 0; i < m.cfg.OperationAttempts; i++ {
		if err = op(); err == nil || errors.Is(err, queue.ErrTooLarge) || errors.Is(err, queue.ErrInvalid) || errors.Is(err, queue.ErrNotFound) {
			return err
		}
		if i+1 < m.cfg.OperationAttempts {
			if clock.Sleep(ctx, m.clk, d) != nil {
				return err
			}
			d *= 2
		}
	}
	return err
}

// runJob decodes and runs one task and takes its disposition.
func (m *Manager) runJob(svc, hard context.Context, j *job) {
	m.mu.Lock()
	m.running[j] = struct{}{}
	m.mu.Unlock()
	if !j.settled.Load() { // releaseStuck may already have given it up
		m.process(svc, hard, j)
	}
	if !j.settled.Load() {
		// Every path below settles; this guards against a missed one.
		m.abandon(j, errors.New("no disposition"))
	}
}

func (m *Manager) process(svc, hard context.Context, j *job) {
	if err := j.msg.Unresolved; err != nil {
		if errors.Is(err, claimcheck.ErrBlobUnavailable) {
			// The blob store failed this time: the message comes back
			// after its visibility timeout (and, failing for good, goes
			// to the dead-letter queue by the queue's redrive policy).
			j.qs.log.Warn("claim-checked body unavailable; the message will be redelivered", "message_id", j.msg.ID, "error", err)
			m.abandon(j, err)
			return
		}
		reason := ReasonUndecodable
		if errors.Is(err, claimcheck.ErrRefused) {
			// A reference the claim check does not own: hostile or
			// broken, never retryable.
			reason = ReasonPermanent
		}
		m.deadLetter(svc, j, nil, reason, err, 0)
		return
	}
	t, err := task.Decode(j.msg.Body)
	if err != nil {
		m.deadLetter(svc, j, nil, ReasonUndecodable, err, 0)
		return
	}
	if !t.Type.Known() {
		m.deadLetter(svc, j, t, ReasonUnknownType, fmt.Errorf("unknown task type %q", string(t.Type)), t.Attempts)
		return
	}
	if dep, down := m.circ.typeDown(t.Type); down {
		// Not run, not an attempt: its dependency is down.
		m.release(svc, j, "dependency "+dep+" unavailable")
		return
	}
	// aimd.WithTurns: a task that has had its store's turn finishes
	// rather than being released half done (throttle.go).
	ctx := processors.WithQueue(aimd.WithTurns(hard), j.qs.q.Name())
	ctx = processors.WithAttempts(ctx, processors.Attempts{Done: t.Attempts, Limit: m.cfg.MaxAttempts})
	ctx, continued := processors.WithContinuation(ctx)
	ctx = m.countRequests(ctx, j, t)
	started := m.clk.Now()
	ctx, endSpan := m.cfg.Tracing.StartTask(ctx, j.qs.q.Name(), j.msg.Attributes, j.msg.ID)
	herr := m.handler.Handle(ctx, t)
	endSpan(string(t.Type), herr)
	if m.cfg.Tracing.On() {
		// What is sent for this task (its retry) continues its trace.
		svc = trace.ContextWithSpan(svc, trace.SpanFromContext(ctx))
	}
	log := j.qs.log.With(t.LogAttrs()...)
	if herr != nil && hard.Err() != nil {
		// Shutdown cancelled the task: it neither failed nor succeeded.
		m.release(svc, j, "cancelled at shutdown")
		return
	}
	if why, ok := processors.IsReleased(herr); ok {
		// Not an attempt: the message goes back as it came.
		m.release(svc, j, why)
		return
	}
	if store, in, ok := processors.IsThrottled(herr); ok {
		// The store answers, slower than asked: not an attempt, and
		// no circuit (throttle.go).
		m.releaseThrottled(svc, j, store, in, herr)
		return
	}
	m.timeTask(j, t, started)
	if dep, ok := processors.IsUnavailable(herr); ok {
		// An outage, not a failure: no attempt is counted.
		m.circ.trip(dep, t.Type, j.qs.index, herr)
		m.release(svc, j, "dependency "+dep+" unavailable")
		return
	}
	var pe *processors.PanicError
	if errors.As(herr, &pe) {
		log.Error("processor panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	switch {
	case herr == nil:
		if m.observe(svc, j, TaskOutcome{Task: t, Outcome: doneOrContinued(continued()), Attempts: t.Attempts + 1}) {
			m.succeed(j)
		}
	case processors.IsPermanent(herr):
		m.deadLetter(svc, j, t, ReasonPermanent, herr, t.Attempts+1)
	case t.Attempts+1 >= m.cfg.MaxAttempts:
		m.deadLetter(svc, j, t, ReasonFailed, herr, t.Attempts+1)
	default:
		m.retryTask(svc, j, t, herr, log)
	}
}

// deadLetter sends the message to the dead-letter queue, then deletes it.
func (m *Manager) deadLetter(svc context.Context, j *job, t *task.Task, reason string, cause error, attempts int) {
	d := &DeadLetter{
		Body: j.msg.Body, Reason: reason, Error: cause.Error(), SourceQueue: j.qs.q.Name(),
		Attempts: attempts, Worker: m.cfg.WorkerID, Time: m.clk.Now().UTC(),
		MessageID: j.msg.ID, ReceiveCount: j.msg.ReceiveCount,
	}
	if t != nil {
		d.TaskType = t.Type
		if reason == ReasonFailed || reason == ReasonPermanent {
			d.Processor = m.cfg.ProcessorName(t.Type)
		}
	}
	entry, err := EncodeDeadLetter(d)
	dlq := m.cfg.DeadLetter
	send := func(e queue.SendEntry) error {
		return m.retry(svc, func() error {
			cctx, cancel := context.WithTimeout(svc, m.cfg.CallTimeout)
			defer cancel()
			return dlq.Send(cctx, e)
		})
	}
	if err == nil {
		err = send(entry)
	}
	if errors.Is(err, queue.ErrTooLarge) {
		err = send(EncodeDeadLetterRaw(d))
	}
	log := j.qs.log.With("task_type", string(d.TaskType), "reason", reason, "attempts", attempts, "message_id", j.msg.ID)
	if err != nil {
		log.Error("could not dead-letter the task; the message will be redelivered", "error", cause.Error(), "send_error", err)
		m.abandon(j, err)
		return
	}
	m.obs.DeadLettered(d.TaskType, reason)
	log.Warn("task dead-lettered", "error", cause.Error())
	if m.observe(svc, j, TaskOutcome{Task: t, Outcome: OutcomeDeadLettered, Reason: reason, Err: cause, Attempts: attempts}) {
		m.succeed(j)
	}
	if t != nil && m.cfg.OnDeadLetter != nil {
		cctx, cancel := context.WithTimeout(svc, m.cfg.CallTimeout)
		defer cancel()
		if err := m.cfg.OnDeadLetter(cctx, t, reason, cause); err != nil {
			log.Error("dead-letter hook failed", "error", err)
		}
	}
}

// succeed hands the message to its queue's batch deleter.
func (m *Manager) succeed(j *job) {
	if !j.settled.CompareAndSwap(false, true) {
		return
	}
	j.qs.del.add(j)
	m.done(j)
}

// abandon stops tracking the message without deleting it: it becomes
// visible again when its visibility timeout ends and is redelivered.
func (m *Manager) abandon(j *job, _ error) {
	if !j.settled.CompareAndSwap(false, true) {
		return
	}
	m.ext.remove(j.item)
	m.done(j)
}
