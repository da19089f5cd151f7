package metrics

import (
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// TaskTiming is what Workman saw of one task it ran, for the queue-wait
// histograms (p50/p99 per queue and task type).
type TaskTiming struct {
	Queue string
	Type  task.Type
	// Wait is the time from the message's send (SQS SentTimestamp, read
	// in the ReceiveMessage call that brought it) to the task's start.
	// A retry is a message of its own, sent with its retry delay: its
	// wait counts from that send, the delay included.
	Wait time.Duration
	// Run is how long the handler ran.
	Run time.Duration
	// Attempts is this attempt's number (1 for the first).
	Attempts int
}

// TaskTimer is implemented by a Recorder that records TaskTimings
// (prometheusmetrics, cloudwatchmetrics, Multi). It is optional: Workman
// asks its Observer for it.
type TaskTimer interface {
	TaskTimed(TaskTiming)
}

// TaskTimed implements TaskTimer: each recorder that is one is told.
func (m multi) TaskTimed(tt TaskTiming) {
	for _, r := range m {
		if t, ok := r.(TaskTimer); ok {
			t.TaskTimed(tt)
		}
	}
}

// TaskTimed implements TaskTimer.
func (Nop) TaskTimed(TaskTiming) {}
