package processors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/millfleet/mill/pkg/task"
)

// Named is implemented by handlers that have a human name (used in logs and
// in dead-letter metadata as the "processor"). Handlers without one are
// named after their task type.
type Named interface {
	Name() string
}

// Mux routes tasks to handlers by task type; it is itself a Handler, so
// middleware wraps it like any processor. A task whose type has no handler
// fails with a Permanent error (it goes to the dead-letter queue: no retry
// can make an unregistered type processable). Mux is safe for concurrent use;
// registration normally happens once, before Workman starts.
type Mux struct {
	mu       sync.RWMutex
	handlers map[task.Type]Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[task.Type]Handler{}} }

// Register registers h for tasks of type t. It panics when t is empty, h is
// nil or t already has a handler: those are programming errors in the
// single place that registers processors.
func (m *Mux) Register(t task.Type, h Handler) {
	if t == "" {
		panic("processors: Mux.Register with an empty task type")
	}
	if h == nil {
		panic("processors: Mux.Register(" + string(t) + ") with a nil handler")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.handlers[t]; dup {
		panic("processors: Mux.Register: task type " + string(t) + " registered twice")
	}
	m.handlers[t] = h
}

// RegisterFunc registers f for tasks of type t (see Register).
func (m *Mux) RegisterFunc(t task.Type, f func(ctx context.Context, t *task.Task) error) {
	m.Register(t, HandlerFunc(f))
}

// Lookup returns the handler registered for t.
func (m *Mux) Lookup(t task.Type) (Handler, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h, ok := m.handlers[t]
	return h, ok
}

// Types returns the registered task types, sorted.
func (m *Mux) Types() []task.Type {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]task.Type, 0, len(m.handlers))
	for t := range m.handlers {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ProcessorName returns the name of the processor for t: the handler's Name
// when it implements Named, else the task type itself; "" when t has no
// handler.
func (m *Mux) ProcessorName(t task.Type) string {
	h, ok := m.Lookup(t)
	if !ok {
		return ""
	}
	if n, ok := h.(Named); ok {
		return n.Name()
	}
	return string(t)
}

// Handle dispatches tk to the handler registered for its type. An
// unregistered type is a Permanent error.
func (m *Mux) Handle(ctx context.Context, tk *task.Task) error {
	h, ok := m.Lookup(tk.Type)
	if !ok {
		return Permanent(fmt.Errorf("%w: %q", ErrNoHandler, string(tk.Type)))
	}
	return h.Handle(ctx, tk)
}

// ErrNoHandler is wrapped (as a Permanent error) by Mux.Handle for a task type
// without a handler.
var ErrNoHandler = errors.New("processors: no processor registered for task type")
