package memnotify

import (
	"context"
	"slices"
	"sync"

	"github.com/millfleet/mill/pkg/notify"
)

// Notifier keeps every event it is given, for tests and the dev mode.
type Notifier struct {
	mu     sync.Mutex
	events []notify.Event
}

// Notify implements notify.Notifier.
func (m *Notifier) Notify(ctx context.Context, e notify.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
	return nil
}

// Events returns the events so far, oldest first.
func (m *Notifier) Events() []notify.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}
