package workman

import (
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// tenantOf is the account a message's task belongs to, the key Workman
// shares its workers by: the message's group (SQS MessageGroupId, which
// every Mill sender sets to the task's account), else the account in the
// body (messages of senders that set no group); "" when neither says.
// Only the dispatch order depends on it: a wrong one costs fairness, never
// a task.
func tenantOf(m *queue.Message) string {
	if m.Group != "" {
		return m.Group
	}
	if m.Unresolved != nil {
		return ""
	}
	t, err := task.Decode(m.Body)
	if err != nil {
		return ""
	}
	return t.Get(task.KeyAccount)
}

// nextHeld is the index in q.held of the job the next free worker of
// queue q runs: of the jobs that are not uncertain, the one whose tenant
// has the fewest tasks running, the earliest received among equals. So a
// batch is dispatched round-robin across its accounts, and an account that
// already holds workers yields the next one to another account's held
// work: one account's backlog does not hold every worker while another
// account's messages are held. -1 when none is ready.
func (p *planner) nextHeld(q *pqueue) int {
	best := -1
	for k, h := range q.held {
		if h.uncertain {
			continue
		}
		if best < 0 || p.tenants[h.j.tenant] < p.tenants[q.held[best].j.tenant] {
			best = k
		}
	}
	return best
}

// take removes held job k of q and counts it as running.
func (p *planner) take(q *pqueue, k int) *job {
	j := q.held[k].j
	q.held = append(q.held[:k], q.held[k+1:]...)
	p.held--
	p.running++
	p.tenants[j.tenant]++
	return j
}

// finished records that a worker finished job j.
func (p *planner) finished(j *job) {
	p.running--
	if j == nil {
		return
	}
	if p.tenants[j.tenant]--; p.tenants[j.tenant] <= 0 {
		delete(p.tenants, j.tenant)
	}
}
