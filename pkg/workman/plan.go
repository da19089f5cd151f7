package workman

import (
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

// planner decides which queue receives what, which held message the next
// free worker runs, and which held messages go back to their queue. It is
// pure state (no goroutines, no clock, no I/O): the dispatcher reports every
// event to it and carries out what decide returns, so the policy is tested
// deterministically. The policy is described in the package documentation;
// the terms used here:
//
//   - A queue's answer is what its latest receive said: backlog (it
//     returned as many messages as asked for: more are probably waiting),
//     quiet (fewer; or a long poll on it has gone the settle wait without
//     an answer, which SQS gives within a round trip when a message is
//     there: a few recent round trips, at most ReceiveWait), or unknown
//     (not asked since the manager last lost sight of it).
//   - A queue is blocked while a higher queue has a backlog, unless it has a
//     minimum share. A blocked queue is not received from; what it already
//     holds still runs when no higher message is held (a free worker never
//     waits while a message is held). A blocked queue's quiet answer is
//     forgotten once nothing is in flight on it, so it is asked again as
//     soon as it is unblocked.
//   - Quiet and unknown queues are watched: a long poll for one message.
//     While any queue has a backlog or is unknown (active), every unblocked
//     one is watched at once; when every queue is quiet (idle), one watch at
//     a time goes round the queues, the top queue every other turn. A queue
//     woken because work this manager sent it with a delay has come due
//     (wake) is watched at once, idle or not.
//   - A backlogged, unblocked queue receives batches: one receive at a
//     time, asked for only when nothing it received is still held, and only
//     when the free budget (workers + one batch − running − held − batches in
//     flight) fits the batch. Watches take no budget: each may add one
//     message beyond it.
//   - A share queue below a backlog is contended: it receives its quota
//     (its share of a batch, at least one) when its credit is not in debt,
//     and the backlogged queue's batch shrinks by that quota. A deficit
//     counter over task starts gives it the next free worker whenever its
//     share of the starts has come due; otherwise workers go by priority.
//   - A message received by a receive that started or ended while a higher
//     queue was unknown is uncertain: it waits until every higher queue has
//     answered; if one then has a backlog (and its queue has no share), it
//     is released at once.
type planner struct {
	workers, batch         int
	receiveWait, watchWait time.Duration

	qs            []pqueue
	running       int // handed to a worker and not finished
	held          int // received, not handed to a worker
	reservedBatch int // messages batch receives in flight may return
	rotation      []int
	rotPos        int
	seq           uint64
	stopped       bool
	// tenants counts the running jobs by tenant (fair.go).
	tenants map[string]int
}

// ppm is a fraction in parts per million.
const ppm = 1_000_000

type answer uint8

const (
	unknown answer = iota
	quiet
	backlog
)

func (a answer) String() string {
	return [...]string{"unknown", "quiet", "backlog"}[a]
}

type recvKind uint8

const (
	noRecv    recvKind = iota
	watchRecv          // one message, long poll
	batchRecv          // a batch, ReceiveWait
)

// grant lets a queue's receiver make one receive.
type grant struct {
	queue int
	kind  recvKind
	n     int
	wait  time.Duration
	seq   uint64
	// settle: the queue is unknown; if the receive has not returned after
	// ReceiveWait, report it with waited (it is quiet).
	settle bool
}

type pqueue struct {
	share  int64 // minimum share, ppm (0: none)
	credit int64 // deficit counter of the share, ppm

	ans      answer
	ready    bool // its receiver waits for a grant
	inflight recvKind
	seq      uint64 // of the grant in flight
	n        int    // messages asked for by the receive in flight
	// unsure: when the receive in flight was granted, a higher queue was
	// unknown
	unsure bool
	held   []heldJob
	// wake: work sent to the queue with a delay has come due; the queue is
	// watched at once even when the manager is idle.
	wake bool
}

type heldJob struct {
	j         *job
	uncertain bool
}

func newPlanner(c Config, shares []float64) *planner {
	p := &planner{
		workers: c.Workers, batch: queue.MaxBatch,
		receiveWait: c.ReceiveWait, watchWait: c.IdlePollWait,
		qs: make([]pqueue, len(shares)), tenants: map[string]int{},
	}
	for i, s := range shares {
		p.qs[i].share = int64(s*ppm + 0.5)
	}
	p.rotation = []int{0}
	for i := 1; i < len(shares); i++ {
		if i > 1 {
			p.rotation = append(p.rotation, 0)
		}
		p.rotation = append(p.rotation, i)
	}
	return p
}

// ask records that queue i's receiver waits for a grant.
func (p *planner) ask(i int) { p.qs[i].ready = true }

// wake records that messages sent to queue i with a delay are due: it is
// watched as soon as its receiver is ready, outside the idle rotation.
func (p *planner) wake(i int) { p.qs[i].wake = true }

// unask withdraws queue i's request (its receiver stops).
func (p *planner) unask(i int) { p.qs[i].ready = false }

// abort undoes grant g, which its receiver will not use.
func (p *planner) abort(g grant) {
	q := &p.qs[g.queue]
	if q.inflight != noRecv && q.seq == g.seq {
		p.endReceive(q)
	}
}

func (p *planner) endReceive(q *pqueue) {
	if q.inflight == batchRecv {
		p.reservedBatch -= q.n
	}
	q.inflight = noRecv
}

// received records the answer to grant g: the jobs it returned.
func (p *planner) received(g grant, jobs []*job) {
	q := &p.qs[g.queue]
	if q.inflight == noRecv || q.seq != g.seq {
		return
	}
	p.endReceive(q)
	wasIdle := p.idle()
	if len(jobs) >= g.n {
		q.ans = backlog
	} else {
		q.ans = quiet
	}
	if len(jobs) > 0 && wasIdle {
		// The idle rotation's answers are old: ask every queue again.
		for k := range p.qs {
			if k != g.queue && p.qs[k].inflight == noRecv {
				p.qs[k].ans = unknown
			}
		}
	}
	uncertain := q.unsure || p.unsettledAbove(g.queue)
	for _, j := range jobs {
		q.held = append(q.held, heldJob{j: j, uncertain: uncertain})
	}
	p.held += len(jobs)
}

// failed records that grant g's receive failed. An unknown queue that
// cannot be read counts as quiet, so it holds back no other queue; its
// receiver asks again after its backoff.
func (p *planner) failed(g grant) {
	q := &p.qs[g.queue]
	if q.inflight == noRecv || q.seq != g.seq {
		return
	}
	p.endReceive(q)
	if q.ans == unknown {
		q.ans = quiet
	}
}

// paused records that grant g was not used because its queue is paused:
// the queue has nothing for this worker, like a quiet one.
func (p *planner) paused(g grant) {
	q := &p.qs[g.queue]
	if q.inflight == noRecv || q.seq != g.seq {
		return
	}
	p.endReceive(q)
	q.ans = quiet
}

// waited records that grant g's long poll has waited ReceiveWait without an
// answer: the queue was empty when it was asked.
func (p *planner) waited(g grant) {
	q := &p.qs[g.queue]
	if q.inflight == watchRecv && q.seq == g.seq && q.ans == unknown {
		q.ans = quiet
	}
}

// stop ends all granting and starting and returns every held job.
func (p *planner) stop() []*job {
	p.stopped = true
	var out []*job
	for i := range p.qs {
		for _, h := range p.qs[i].held {
			out = append(out, h.j)
		}
		p.qs[i].held = nil
	}
	p.held = 0
	return out
}

// idle reports whether every queue is quiet.
func (p *planner) idle() bool {
	for i := range p.qs {
		if p.qs[i].ans != quiet {
			return false
		}
	}
	return true
}

// blocked reports whether queue i is held back by a higher backlog.
func (p *planner) blocked(i int) bool {
	if p.qs[i].share > 0 {
		return false
	}
	return p.backlogAbove(i)
}

func (p *planner) backlogAbove(i int) bool {
	for k := 0; k < i; k++ {
		if p.qs[k].ans == backlog {
			return true
		}
	}
	return false
}

// unsettledAbove reports whether a queue above i may have a backlog the
// manager does not know of yet.
func (p *planner) unsettledAbove(i int) bool {
	for k := 0; k < i; k++ {
		if p.qs[k].ans == unknown && !p.blocked(k) {
			return true
		}
	}
	return false
}

// contended reports whether share queue i is owed its share now: a higher
// queue has a backlog and i has work.
func (p *planner) contended(i int) bool {
	q := &p.qs[i]
	return q.share > 0 && p.backlogAbove(i) && (q.ans == backlog || len(q.held) > 0)
}

// quota is the batch a contended share queue receives: its share of one
// batch, at least one message.
func (p *planner) quota(i int) int {
	return max(1, int((p.qs[i].share*int64(p.batch)+ppm-1)/ppm))
}

// decide returns the receives to grant, the held jobs to start (one per
// free worker, in the order to start them) and the held jobs to release,
// and records them as done.
func (p *planner) decide() (grants []grant, starts, releases []*job) {
	if p.stopped {
		return nil, nil, nil
	}
	// A blocked queue forgets a quiet answer once nothing is in flight.
	for i := range p.qs {
		q := &p.qs[i]
		if q.ans == quiet && q.inflight == noRecv && p.blocked(i) {
			q.ans = unknown
		}
	}
	// Uncertain jobs: settle them once every higher queue has answered.
	for i := range p.qs {
		q := &p.qs[i]
		if !hasUncertain(q) || p.unsettledAbove(i) {
			continue
		}
		release := p.blocked(i)
		kept := q.held[:0]
		for _, h := range q.held {
			if h.uncertain && release {
				releases = append(releases, h.j)
				p.held--
				continue
			}
			h.uncertain = false
			kept = append(kept, h)
		}
		q.held = kept
	}
	for p.running < p.workers {
		i := p.pick()
		if i < 0 {
			break
		}
		p.charge(i)
		q := &p.qs[i]
		starts = append(starts, p.take(q, p.nextHeld(q)))
	}
	grants = p.grants()
	return grants, starts, releases
}

// pick chooses the queue whose first held job the next free worker runs:
// a contended share queue whose credit has come due, else the highest
// queue with a job ready; -1 when none is ready.
func (p *planner) pick() int {
	best := -1
	for i := range p.qs {
		q := &p.qs[i]
		if !p.contended(i) || !ready(q) || q.credit+q.share < ppm {
			continue
		}
		if best < 0 || q.credit > p.qs[best].credit {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i := range p.qs {
		if ready(&p.qs[i]) {
			return i
		}
	}
	return -1
}

func hasUncertain(q *pqueue) bool {
	for _, h := range q.held {
		if h.uncertain {
			return true
		}
	}
	return false
}

func ready(q *pqueue) bool {
	for _, h := range q.held {
		if !h.uncertain {
			return true
		}
	}
	return false
}

// charge updates the share credits for a start from queue started: every
// contended share queue earns its share of the start, and the one that
// started pays one start. Credit is capped at one start, so a queue that
// had nothing to run does not bank a burst; debt — starts a share queue got
// beyond its due, on slots no higher message was held for — is remembered
// up to one batch and paid back by skipping due turns, so the share stays
// near its floor while the higher queue keeps the workers busy.
func (p *planner) charge(started int) {
	for i := range p.qs {
		q := &p.qs[i]
		if q.share == 0 {
			continue
		}
		if !p.contended(i) {
			q.credit = 0
			continue
		}
		q.credit += q.share
		if i == started {
			q.credit -= ppm
		}
		q.credit = min(max(q.credit, -int64(p.batch)*ppm), ppm)
	}
}

func (p *planner) grants() []grant {
	var out []grant
	give := func(i int, kind recvKind, n int, wait time.Duration) {
		q := &p.qs[i]
		p.seq++
		g := grant{queue: i, kind: kind, n: n, wait: wait, seq: p.seq, settle: kind == watchRecv && q.ans == unknown}
		q.ready, q.inflight, q.seq, q.n, q.wake = false, kind, p.seq, n, false
		q.unsure = p.unsettledAbove(i)
		if kind == batchRecv {
			p.reservedBatch += n
		}
		out = append(out, g)
	}
	if p.idle() {
		// A queue whose delayed work is due is watched at once; beyond
		// that, one watch at a time, round the queues.
		for i := range p.qs {
			if q := &p.qs[i]; q.wake && q.ready && q.inflight == noRecv {
				give(i, watchRecv, 1, p.watchWait)
			}
		}
		for i := range p.qs {
			if p.qs[i].inflight != noRecv {
				return out
			}
		}
		for range p.rotation {
			i := p.rotation[p.rotPos]
			p.rotPos = (p.rotPos + 1) % len(p.rotation)
			if p.qs[i].ready {
				give(i, watchRecv, 1, p.watchWait)
				break
			}
		}
		return out
	}
	for i := range p.qs {
		q := &p.qs[i]
		if q.ready && q.inflight == noRecv && q.ans != backlog && !p.blocked(i) {
			give(i, watchRecv, 1, p.watchWait)
		}
	}
	// Batches: contended share queues first (their quota), then the
	// highest backlogged queue (one batch less the share quotas).
	main := -1
	for i := range p.qs {
		if p.qs[i].ans == backlog {
			main = i
			break
		}
	}
	if main < 0 {
		return out
	}
	free := p.workers + p.batch - p.running - p.held - p.reservedBatch
	mainN := p.batch
	var order []int
	for i := main + 1; i < len(p.qs); i++ {
		if p.qs[i].share > 0 && p.qs[i].ans == backlog {
			order = append(order, i)
			mainN -= p.quota(i)
		}
	}
	order = append(order, main)
	for _, i := range order {
		q := &p.qs[i]
		if !q.ready || q.inflight != noRecv || len(q.held) > 0 || p.unsettledAbove(i) {
			continue
		}
		if i != main && q.credit < 0 {
			continue // in debt: no more of it until its turn comes near
		}
		n := max(1, mainN)
		if i != main {
			n = p.quota(i)
		}
		if free < n {
			break // keep what is free for this queue
		}
		give(i, batchRecv, n, p.receiveWait)
		free -= n
	}
	return out
}
