package metrics

import (
	"slices"

	"github.com/millfleet/mill/pkg/task"
)

// OtherTaskType is the task-type label of every task whose type is not a
// registered one.
const OtherTaskType = "other"

// TaskTypeLabels maps task types to metric labels. A task type comes from
// a message body, so anyone who can send to a queue can make up new ones;
// only the registered types get a label (and a series) of their own, the
// rest share OtherTaskType, so the number of series stays bounded.
type TaskTypeLabels struct{ types []task.Type }

// NewTaskTypeLabels labels the types given (normally the processors
// registered in the worker's mux, processors.Mux.Types); none given means
// every known type (task.Types).
func NewTaskTypeLabels(types []task.Type) TaskTypeLabels {
	if len(types) == 0 {
		types = task.Types
	}
	return TaskTypeLabels{types: slices.Clone(types)}
}

// Label returns t's label: t itself when registered, else OtherTaskType.
func (l TaskTypeLabels) Label(t task.Type) string {
	if slices.Contains(l.types, t) {
		return string(t)
	}
	return OtherTaskType
}
