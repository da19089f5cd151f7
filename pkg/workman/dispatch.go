package workman

import (
	"context"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// dispatcher runs the planner: every queue's receiver asks it for a grant
// before each receive and reports the answer, every worker takes its next
// job from it and reports when the job is done. Each event updates the
// planner under one mutex; the grants and starts it decides are handed over
// on channels that never block (a receiver has at most one grant pending;
// jobs holds at most Workers, and a job is sent only for a free worker).
type dispatcher struct {
	m      *Manager
	svc    context.Context // for releases
	mu     sync.Mutex
	p      *planner
	grants []chan grant
	jobs   chan *job
	lat    *answerLatency
}

func newDispatcher(m *Manager, svc context.Context) *dispatcher {
	shares := make([]float64, len(m.queues))
	for i, qs := range m.queues {
		shares[i] = m.cfg.MinShare[qs.q.Name()]
	}
	d := &dispatcher{m: m, svc: svc, p: newPlanner(m.cfg, shares), jobs: make(chan *job, m.cfg.Workers), lat: newAnswerLatency()}
	for range m.queues {
		d.grants = append(d.grants, make(chan grant, 1))
	}
	return d
}

// update applies f to the planner, hands out what it decides, and releases
// the jobs it gives up (outside the lock: releasing is a queue call).
func (d *dispatcher) update(f func(p *planner)) {
	d.mu.Lock()
	f(d.p)
	grants, starts, releases := d.p.decide()
	for _, g := range grants {
		d.grants[g.queue] <- g
	}
	for _, j := range starts {
		d.jobs <- j
	}
	d.mu.Unlock()
	d.releaseByQueue(releases, "a higher-priority queue has a backlog")
}

func (d *dispatcher) releaseByQueue(js []*job, why string) {
	byQueue := map[*qstate][]*job{}
	for _, j := range js {
		byQueue[j.qs] = append(byQueue[j.qs], j)
	}
	for qs, js := range byQueue {
		d.m.releaseMany(d.svc, qs, js, why)
	}
}

// await asks for queue i's next grant and waits for it; false when ctx
// ended first.
func (d *dispatcher) await(ctx context.Context, i int) (grant, bool) {
	d.update(func(p *planner) { p.ask(i) })
	select {
	case g := <-d.grants[i]:
		return g, true
	case <-ctx.Done():
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case g := <-d.grants[i]:
		d.p.abort(g)
	default:
		d.p.unask(i)
	}
	return grant{}, false
}

// stop ends granting and starting and releases the held jobs.
func (d *dispatcher) stop() {
	d.mu.Lock()
	held := d.p.stop()
	d.mu.Unlock()
	d.releaseByQueue(held, "shutdown before start")
}

// receive is queue i's receiver: it receives what the planner grants until
// ctx ends.
func (d *dispatcher) receive(ctx context.Context, i int) {
	m := d.m
	qs := m.queues[i]
	var backoff time.Duration
	for {
		g, ok := d.await(ctx, i)
		if !ok {
			return
		}
		if ctx.Err() != nil { // granted as shutdown began
			d.update(func(p *planner) { p.abort(g) })
			return
		}
		if (m.cfg.Pauser != nil && m.cfg.Pauser.QueuePaused(qs.q.Name())) || m.circ.queueDown(i) {
			// Nothing here for this worker (paused, or its tasks need a
			// dependency that is down): quiet, so it holds back no other
			// queue; looked at again after the shortest backoff (both are
			// read from memory).
			d.update(func(p *planner) { p.paused(g) })
			if clock.Sleep(ctx, m.clk, m.cfg.QueueBackoffMin) != nil {
				return
			}
			continue
		}
		// A receive runs to completion even when ctx ends, and what it
		// returns is released at once. A long poll too, unless the queue
		// is safe to hang up on: SQS goes on waiting when its caller hangs
		// up, and a message it takes then would stay invisible for the
		// whole visibility timeout. So shutdown waits for the polls in
		// flight (at most IdlePollWait).
		rctx := context.WithoutCancel(ctx)
		if g.kind == watchRecv && qs.hangUpSafe {
			rctx = ctx
		}
		rctx, cancel := context.WithTimeout(rctx, g.wait+m.cfg.CallTimeout)
		asked := m.clk.Now()
		stopSettle := d.settleAfter(g, asked)
		msgs, err := qs.q.Receive(rctx, g.n, g.wait)
		if err == nil && len(msgs) > 0 && (g.kind == batchRecv || g.settle) {
			d.lat.observe(m.clk.Now().Sub(asked))
		}
		stopSettle()
		cancel()
		if err != nil {
			d.update(func(p *planner) { p.failed(g) })
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, m.cfg.QueueBackoffMin), m.cfg.QueueBackoffMax)
			qs.log.Warn("receive failed", "error", err, "retry_in", backoff)
			if clock.Sleep(ctx, m.clk, backoff) != nil {
				return
			}
			continue
		}
		backoff = 0
		m.obs.Received(qs.q.Name(), len(msgs))
		jobs := make([]*job, len(msgs))
		for k, msg := range msgs {
			jobs[k] = &job{qs: qs, msg: msg, item: m.ext.add(qs, msg), tenant: tenantOf(msg)}
		}
		if len(jobs) > 0 {
			m.obs.InFlight(len(jobs))
		}
		if ctx.Err() != nil {
			// Shutdown began while the receive ran: what it brought is
			// released at once.
			d.update(func(p *planner) { p.abort(g) })
			m.releaseMany(d.svc, qs, jobs, "shutdown before start")
			return
		}
		d.update(func(p *planner) { p.received(g, jobs) })
	}
}

// settleAfter reports grant g's long poll, sent at asked, as waited once it
// has been in flight for the settle wait (when g asks for it): a multiple of the recent
// answer times, at most ReceiveWait (settle.go). A new answer time moves the
// deadline, so the polls sent at start, before any answer, settle as soon
// as the first answer shows what a round trip takes. The returned func
// stops it.
func (d *dispatcher) settleAfter(g grant, asked time.Time) (stop func()) {
	if !g.settle {
		return func() {}
	}
	clk := d.m.clk
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			wait, changed := d.lat.settleWait(d.m.cfg.ReceiveWait)
			t := clk.NewTimer(asked.Add(wait).Sub(clk.Now()))
			select {
			case <-t.C():
				d.m.queues[g.queue].log.Debug("no answer within the settle wait: counted as empty", "settle_wait", wait)
				d.update(func(p *planner) { p.waited(g) })
				return
			case <-changed:
				t.Stop()
			case <-done:
				t.Stop()
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// work is one worker: it runs the jobs handed to it until jobs is closed;
// once stop is closed it releases them instead.
func (d *dispatcher) work(svc, hard context.Context, stop <-chan struct{}) {
	m := d.m
	for j := range d.jobs {
		stopping := m.stopping.Load()
		select {
		case <-stop:
			stopping = true
		default:
		}
		if stopping {
			m.release(svc, j, "shutdown before start")
		} else {
			m.runJob(svc, hard, j)
		}
		d.update(func(p *planner) { p.finished(j) })
	}
}
