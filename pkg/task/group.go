package task

import "github.com/millfleet/mill/pkg/queue"

// Group is the queue group (SQS MessageGroupId, queue.SendEntry.Group) a
// task is sent with: its account, the tenant SQS fair queues and Workman's
// dispatch share the workers between. An account that cannot be a group
// (queue.CheckGroup) gives "": the task loses its fairness, never its
// delivery.
func (t *Task) Group() string { return queue.GroupFor(t.Get(KeyAccount)) }
