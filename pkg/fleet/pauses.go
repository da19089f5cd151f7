package fleet

import (
	"slices"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TypeQueues maps each task type to the keys of the queues that carry it in
// Mill's layout (docs/ARCHITECTURE.md, Queues). Pausing a type pauses
// receiving from these queues, so its messages are left in the queue rather
// than received and released over and over (which would also count towards
// the queues' redrive limit).
var TypeQueues = map[task.Type][]string{
	task.TypeAudit:     {queue.KeyAudit},
	task.TypeDup:       {queue.KeyDupHigh, queue.KeyDupLow},
	task.TypeBitReport: {queue.KeyBitReport},
	task.TypeBitError:  {queue.KeyBitError},
	task.TypeBit:       {queue.KeyBit},
	// STORAGE_STATS shares the bit queue: pausing either pauses both.
	task.TypeStorageStats: {queue.KeyBit},
}

// PauseSet answers what a set of pauses stops, for queues named under a
// prefix. The zero value pauses nothing.
type PauseSet struct {
	types  map[task.Type]Pause
	queues map[string]Pause // full queue name → the pause that stops it
}

// NewPauseSet returns the set of ps for queues named with prefix.
func NewPauseSet(ps []Pause, prefix string) PauseSet {
	s := PauseSet{types: map[task.Type]Pause{}, queues: map[string]Pause{}}
	for _, p := range ps {
		if p.Kind == PauseType {
			s.types[task.Type(p.Name)] = p
		}
	}
	// A queue's own pause wins over a type's in what QueuePause reports.
	for t, p := range s.types {
		for _, k := range TypeQueues[t] {
			s.queues[queue.Name(prefix, k)] = p
		}
	}
	for _, p := range ps {
		if p.Kind == PauseQueue {
			s.queues[p.Name] = p
		}
	}
	return s
}

// TypePaused reports whether tasks of t are paused.
func (s PauseSet) TypePaused(t task.Type) bool {
	_, ok := s.types[t]
	return ok
}

// QueuePause returns the pause that stops receiving from the queue named
// name: its own, or that of the type it carries (TypeQueues).
func (s PauseSet) QueuePause(name string) (Pause, bool) {
	p, ok := s.queues[name]
	return p, ok
}

// QueuePaused reports whether receiving from the queue named name is
// paused.
func (s PauseSet) QueuePaused(name string) bool {
	_, ok := s.queues[name]
	return ok
}

// ParseTarget reads what an operator names to pause or resume: a known
// task type, else a queue key (named under prefix) or a full queue name.
// The returned pause has only Kind and Name set.
func ParseTarget(prefix, arg string) Pause {
	if task.Type(arg).Known() {
		return Pause{Kind: PauseType, Name: arg}
	}
	if slices.Contains(queue.AllKeys, arg) {
		return Pause{Kind: PauseQueue, Name: queue.Name(prefix, arg)}
	}
	return Pause{Kind: PauseQueue, Name: arg}
}

// Targets lists what can be paused in Mill's layout under prefix: every
// task type, then the six work queues by full name (Workman never receives
// from the dead-letter queue).
func Targets(prefix string) []Pause {
	var out []Pause
	for _, t := range task.Types {
		out = append(out, Pause{Kind: PauseType, Name: string(t)})
	}
	for _, k := range queue.AllKeys {
		if k != queue.KeyDeadLetter {
			out = append(out, Pause{Kind: PauseQueue, Name: queue.Name(prefix, k)})
		}
	}
	return out
}
