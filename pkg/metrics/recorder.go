package metrics

import (
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// Recorder receives everything Workman and the processor middleware report.
// Implementations must be safe for concurrent use and must not block.
type Recorder interface {
	// TaskDone reports one handled task: its type, result
	// (processors.Result*) and how long the handler ran.
	TaskDone(t task.Type, result string, elapsed time.Duration)
	// DeadLettered reports a task sent to the dead-letter queue and why
	// (deadletter.Reason*).
	DeadLettered(t task.Type, reason string)
	// Received reports one receive call on queue that returned n messages
	// (0: an empty receive).
	Received(queue string, n int)
	// InFlight changes the number of messages held or running by delta.
	InFlight(delta int)
}

// Multi returns a Recorder that reports to each of rs (nil entries are
// skipped).
func Multi(rs ...Recorder) Recorder {
	var out multi
	for _, r := range rs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

type multi []Recorder

func (m multi) TaskDone(t task.Type, result string, elapsed time.Duration) {
	for _, r := range m {
		r.TaskDone(t, result, elapsed)
	}
}

func (m multi) DeadLettered(t task.Type, reason string) {
	for _, r := range m {
		r.DeadLettered(t, reason)
	}
}

func (m multi) Received(queue string, n int) {
	for _, r := range m {
		r.Received(queue, n)
	}
}

func (m multi) InFlight(delta int) {
	for _, r := range m {
		r.InFlight(delta)
	}
}

// Nop is a Recorder that records nothing.
type Nop struct{}

func (Nop) TaskDone(task.Type, string, time.Duration) {}
func (Nop) DeadLettered(task.Type, string)            {}
func (Nop) Received(string, int)                      {}
func (Nop) InFlight(int)                              {}

// LimitRecorder receives the changes of the per-store request limits
// (pkg/aimd, through awsconfig.Config.OnLimitChange): store is the
// limiter's key ("s3 <bucket>", "dynamodb <table>", "sns <topic>"), change
// aimd's kind (decrease, increase, reset) and limit the new limit in
// requests per second (0: unlimited). The Prometheus and CloudWatch
// recorders implement it. Stores are operator configuration, so the
// series stay few.
type LimitRecorder interface {
	LimitChanged(store, change string, limit float64)
}
