package workman

import (
	"time"

	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/task"
)

// timeTask reports task t of job j, started at started and just returned,
// to the Observer if it is a metrics.TaskTimer: the wait from the
// message's SentAt (SQS SentTimestamp, asked for in the receive that
// brought it: no request of its own), the run time and the attempt. A
// SentAt in the future (clock skew) counts as no wait; a message without
// one (zero) is reported with none.
func (m *Manager) timeTask(j *job, t *task.Task, started time.Time) {
	tt, ok := m.obs.(metrics.TaskTimer)
	if !ok {
		return
	}
	var wait time.Duration
	if !j.msg.SentAt.IsZero() {
		wait = max(started.Sub(j.msg.SentAt), 0)
	}
	tt.TaskTimed(metrics.TaskTiming{
		Queue: j.qs.q.Name(), Type: t.Type,
		Wait: wait, Run: m.clk.Now().Sub(started), Attempts: t.Attempts + 1,
	})
}
