// Package notify tells operators about events that need their attention or
// that they asked to follow (docs/ARCHITECTURE.md, Notifications): a bit
// report with failures or errors, a space created, a producer run completed
// or failed — what the Java Mill e-mailed its administrators.
//
// An Event has a readable subject and body (for e-mail and chat
// subscribers) and structured attributes (for subscription filter policies
// and programs). Notifier implementations:
//
//   - snsnotify publishes to an Amazon SNS topic (--notify-topic-arn): one
//     Publish per event, the attributes as String message attributes, so
//     operators subscribe e-mail, chat or a queue and filter by event;
//   - Log writes one log line per event (the default without a topic);
//   - memnotify keeps the events (tests, and the dev mode, which prints
//     what it would send).
//
// Delivery is at least once: a task that notifies and is then retried may
// notify again.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Event types: the value of the "event" attribute.
const (
	// EventBitReport: a space's bit-integrity report found failures or
	// errors.
	EventBitReport = "bit-report"
	// EventSpaceCreated: a space was created (audited CREATE_SPACE).
	EventSpaceCreated = "space-created"
	// EventRunCompleted: a looping producer finished a run.
	EventRunCompleted = "producer-run-completed"
	// EventRunFailed: a producer invocation stopped on an error; the next
	// invocation resumes the run.
	EventRunFailed = "producer-run-failed"
	// EventMorselsFailed: a producer invocation gave up morsels (a store
	// or space that failed) without completing the run; the run goes on
	// without them and the next run retries them.
	EventMorselsFailed = "producer-morsels-failed"
	// EventRunReport: every task a producer run queued has its outcome;
	// the run's completion report is written (pkg/runs).
	EventRunReport = "run-report"
)

// Attribute names. Every event has AttrEvent; the others when they apply.
const (
	AttrEvent    = "event"
	AttrAccount  = "account"
	AttrStoreID  = "store_id"
	AttrSpaceID  = "space_id"
	AttrRunID    = "run_id"
	AttrProducer = "producer"
	AttrResult   = "result"
)

// Event is one notification.
type Event struct {
	// Type is one of the Event… constants.
	Type string
	// Subject is one line for people (an e-mail subject).
	Subject string
	// Body is the readable text.
	Body string
	// Attributes are structured values (Attr… names); empty values are
	// left out. Type is added as AttrEvent.
	Attributes map[string]string
	// Time is when it happened.
	Time time.Time
}

// Attrs returns the event's attributes with AttrEvent set and empty values
// left out.
func (e Event) Attrs() map[string]string {
	out := map[string]string{AttrEvent: e.Type}
	for k, v := range e.Attributes {
		if v != "" && k != AttrEvent {
			out[k] = v
		}
	}
	return out
}

// Notifier sends events.
//
// Notify sends e once; an error means it may not have been sent (the
// caller decides whether that fails its task: the audit and report
// processors retry, the producers log it). Implementations are safe for
// concurrent use.
type Notifier interface {
	Notify(ctx context.Context, e Event) error
}

// Log is the Notifier used when no topic is configured: one Info line per
// event with its subject and attributes.
type Log struct{ Logger *slog.Logger }

// Notify implements Notifier.
func (n Log) Notify(ctx context.Context, e Event) error {
	l := n.Logger
	if l == nil {
		l = slog.Default()
	}
	attrs := []any{"subject", e.Subject}
	m := e.Attrs()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		attrs = append(attrs, k, m[k])
	}
	l.InfoContext(ctx, "notification", attrs...)
	return nil
}

// Or returns n, or Log with logger when n is nil.
func Or(n Notifier, logger *slog.Logger) Notifier {
	if n == nil {
		return Log{Logger: logger}
	}
	return n
}

// OneLine replaces control characters (line breaks included) with spaces.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// SpaceCreated is the event of a new space.
func SpaceCreated(account, storeID, spaceID, user string, at time.Time) Event {
	var b strings.Builder
	fmt.Fprintf(&b, "A space was created.\n\n")
	fmt.Fprintf(&b, "Account: %s\nStore:   %s\nSpace:   %s\n", account, storeID, spaceID)
	if user != "" {
		fmt.Fprintf(&b, "User:    %s\n", user)
	}
	fmt.Fprintf(&b, "Time:    %s\n", at.UTC().Format(time.RFC3339))
	return Event{
		Type:       EventSpaceCreated,
		Subject:    fmt.Sprintf("Mill: space %s created in %s/%s", spaceID, account, storeID),
		Body:       b.String(),
		Attributes: map[string]string{AttrAccount: account, AttrStoreID: storeID, AttrSpaceID: spaceID},
		Time:       at,
	}
}
