package workman

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

// releaseThrottled hands back the message of a task whose store throttled
// it (processors.IsThrottled): it becomes visible again after the delay
// asked for and up to half again at random (at most RetryMax), counts no
// attempt and opens no circuit — the store answers, only slower than
// asked, and its learnt request limit (pkg/aimd) paces the tasks that
// follow. Its queue is woken when the delay ends. If the visibility cannot be changed, the message reappears
// when its visibility timeout ends: later, never lost.
func (m *Manager) releaseThrottled(ctx context.Context, j *job, store string, delay time.Duration, cause error) {
	if !j.settled.CompareAndSwap(false, true) {
		return
	}
	m.ext.remove(j.item)
	// Up to half again at random: the tasks one throttle released do not
	// all come back at once.
	delay = max(delay, time.Second)
	delay = min(delay+rand.N(delay/2+1), m.cfg.RetryMax, queue.MaxVisibility)
	err := m.retry(ctx, func() error {
		cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
		defer cancel()
		return j.qs.q.ChangeVisibility(cctx, queue.VisibilityChange{Message: j.msg, Timeout: delay})
	})
	if err != nil {
		j.qs.log.Warn("throttled task: its release failed; the message reappears when its visibility timeout ends",
			"store", store, "error", err)
	} else {
		m.wakes.at(j.qs.index, m.clk.Now().Add(delay))
		j.qs.log.Info("store throttled the task; released without counting an attempt",
			"store", store, "retry_in", delay, "message_id", j.msg.ID, "error", cause.Error())
	}
	m.done(j)
}
