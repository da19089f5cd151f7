package deadletter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/task"
)

// DefaultHold is the default Config.Hold.
const DefaultHold = 30 * time.Second

// DefaultWait is the default Config.Wait: the long-poll wait of a scan's
// receives. A receive that waits (rather than a short poll, which asks
// only some of SQS's servers) answers empty only when nothing is visible,
// so an empty answer ends a scan.
const DefaultWait = time.Second

// Config configures an Inspector.
type Config struct {
	// Queue is the dead-letter queue (required), behind the claim check
	// when Mill uses one: bodies are then resolved as they are received
	// (only from keys the claim check owns; see pkg/queue/claimcheck,
	// Confinement). A blob outlives its message: the claims prefix's
	// expiry removes it.
	Queue queue.Queue `validate:"required"`
	// Open opens a queue to redrive to, by its full name, behind the
	// claim check as well (required for Redrive).
	Open func(ctx context.Context, name string) (queue.Queue, error)
	// Prefix names Mill's queues (queue.Name): a filter's or a redrive's
	// queue may be given by key, and a dead letter is redriven only to
	// one of the work queues under it.
	Prefix string
	// Hold is how long a scan keeps the messages it looked at invisible
	// (default DefaultHold; 1 s..queue.MaxVisibility). A scan extends it
	// while it runs and releases them when it ends.
	Hold time.Duration
	// Wait is the long-poll wait of a scan's receives (default
	// DefaultWait; negative: none — for a queue that answers exactly, such
	// as memqueue).
	Wait time.Duration
	// Clock times the extensions and a redrive's rate (default the
	// system clock). Logger (default slog.Default()).
	Clock  clock.Clock
	Logger *slog.Logger
}

// defaultConfig holds the values withDefaults gives a Config's zero fields.
var defaultConfig = Config{Hold: DefaultHold, Wait: DefaultWait}

func (c Config) withDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Wait = max(c.Wait, 0) // negative: none
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("deadletter: Config", c)
	p.Check(c.Hold >= time.Second && c.Hold <= queue.MaxVisibility, "Hold", c.Hold, "be within 1s..%v", queue.MaxVisibility)
	return p.Err()
}

// Inspector reads and acts on the dead-letter queue: the library behind
// `millctl dlq` and the console's dead-letter page.
//
// SQS cannot show a message without receiving it, so every operation scans:
// it receives each message once with a short visibility timeout (Hold),
// keeps what it looked at invisible while it goes on (extending every
// Hold/2, so a long scan does not see a message twice), and makes the
// messages visible again when it ends — or SQS does after Hold, if the
// process dies. Meanwhile the held messages are invisible to any other
// reader of the dead-letter queue (Workman never reads it), each look adds
// one to a message's ApproximateReceiveCount (harmless: the dead-letter
// queue has no redrive policy), and on a very large queue SQS's sampling
// may leave a message out of one scan. A scan ends when a receive waiting
// Config.Wait brings nothing new.
type Inspector struct {
	cfg Config
}

// New returns an Inspector.
func New(cfg Config) (*Inspector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Inspector{cfg: cfg}, nil
}

// QueueName is the dead-letter queue's name.
func (in *Inspector) QueueName() string { return in.cfg.Queue.Name() }

// Depth is the dead-letter queue's depth.
func (in *Inspector) Depth(ctx context.Context) (queue.Depth, error) {
	return in.cfg.Queue.Depth(ctx)
}

// Entry is one message of the dead-letter queue as a scan saw it.
type Entry struct {
	// Message is the message as received: its ID, when it was
	// dead-lettered (SentAt), how often the dead-letter queue delivered it
	// (ReceiveCount), its attributes.
	Message *queue.Message
	// Letter is always set. For a message in neither dead-letter form it
	// holds the body, the task type and attempts when the body is a task,
	// and as Error why it is not a dead letter.
	Letter *Letter
	// Foreign: the message is in neither of Mill's forms (the SQS redrive
	// policy moved it here, or it is not from Mill).
	Foreign bool
	// Unresolved is the claim check's verdict on a reference it could not
	// resolve (claimcheck.Unresolved): the body is the reference.
	Unresolved error
}

// Form describes where the entry's metadata came from.
func (e *Entry) Form() string {
	switch {
	case e.Foreign:
		return "none (moved by the SQS redrive policy, or not from Mill)"
	case e.Message.Attributes[AttrForm] == FormRaw:
		return FormRaw
	}
	return FormEnvelope
}

// Time is when the task was dead-lettered: the letter's time, else when
// the message was sent to the dead-letter queue.
func (e *Entry) Time() time.Time {
	if !e.Letter.Time.IsZero() {
		return e.Letter.Time
	}
	return e.Message.SentAt
}

// Is reports whether id is the entry's message ID or the ID the task had
// on its source queue.
func (e *Entry) Is(id string) bool {
	return id != "" && (e.Message.ID == id || e.Letter.MessageID == id)
}

func newEntry(m *queue.Message) *Entry {
	e := &Entry{Message: m, Unresolved: claimcheck.Unresolved(m)}
	d, err := Decode(m)
	if err != nil {
		d, e.Foreign = &Letter{Body: m.Body, Error: err.Error()}, true
		if t, terr := task.Decode(m.Body); terr == nil {
			d.TaskType, d.Attempts = t.Type, t.Attempts
		}
	}
	e.Letter = d
	return e
}

// Filter selects entries; the zero Filter selects every one.
type Filter struct {
	// Type is a task type (case-insensitive).
	Type string
	// Error is text the error contains (case-insensitive).
	Error string
	// Source is the source queue, by key (dup-low) or full name.
	Source string
	// ID is the entry's message ID or its source message ID; a scan for
	// an ID stops at the first match.
	ID string
}

// Empty reports whether f selects every entry.
func (f Filter) Empty() bool { return f == Filter{} }

// Match reports whether f selects e.
func (in *Inspector) Match(f Filter, e *Entry) bool {
	d := e.Letter
	switch {
	case f.ID != "" && !e.Is(f.ID):
		return false
	case f.Type != "" && !strings.EqualFold(string(d.TaskType), f.Type):
		return false
	case f.Error != "" && !strings.Contains(strings.ToLower(d.Error), strings.ToLower(f.Error)):
		return false
	case f.Source != "" && d.SourceQueue != f.Source && d.SourceQueue != queue.Name(in.cfg.Prefix, f.Source):
		return false
	}
	return true
}

// Scan is one pass over the dead-letter queue. Next returns the messages
// not seen before, holding every message it returned; Close releases
// them. A Scan is used by one goroutine.
type Scan struct {
	in       *Inspector
	seen     map[string]bool
	held     map[string]*queue.Message // by ID: the newest delivery
	looked   int
	extended time.Time
	done     bool
}

// Scan starts a scan.
func (in *Inspector) Scan() *Scan {
	return &Scan{in: in, seen: map[string]bool{}, held: map[string]*queue.Message{}}
}

// Looked is how many distinct messages the scan has returned.
func (s *Scan) Looked() int { return s.looked }

// Done reports whether the scan has seen the whole queue.
func (s *Scan) Done() bool { return s.done }

// Next receives the next batch and returns the messages the scan has not
// seen before; nil (and Done) when a receive brings nothing new.
func (s *Scan) Next(ctx context.Context) ([]*Entry, error) {
	if s.done {
		return nil, nil
	}
	for {
		if err := s.extend(ctx); err != nil {
			return nil, err
		}
		ms, err := s.in.cfg.Queue.ReceiveWith(ctx, queue.ReceiveOptions{Max: queue.MaxBatch, Wait: s.in.cfg.Wait, Visibility: s.in.cfg.Hold})
		if err != nil {
			return nil, fmt.Errorf("deadletter: receive from %s: %w", s.in.QueueName(), err)
		}
		var out []*Entry
		for _, m := range ms {
			s.held[m.ID] = m // the newest receipt handle is the one that releases
			if s.seen[m.ID] {
				continue
			}
			s.seen[m.ID] = true
			s.looked++
			e := newEntry(m)
			if e.Unresolved != nil {
				s.in.cfg.Logger.Warn("deadletter: claim-check reference not resolved", "id", m.ID, "err", e.Unresolved)
			}
			out = append(out, e)
		}
		switch {
		case len(out) > 0:
			return out, nil
		case len(ms) == 0:
			s.done = true
			return nil, nil
		}
		// Only messages seen before (their hold ran out): receive again.
	}
}

// extend keeps the held messages invisible for another Hold once half of
// it has passed.
func (s *Scan) extend(ctx context.Context) error {
	now := s.in.cfg.Clock.Now()
	if len(s.held) == 0 {
		s.extended = now
		return nil
	}
	if now.Sub(s.extended) < s.in.cfg.Hold/2 {
		return nil
	}
	ch := make([]queue.VisibilityChange, 0, len(s.held))
	for _, m := range s.held {
		ch = append(ch, queue.VisibilityChange{Message: m, Timeout: s.in.cfg.Hold})
	}
	s.extended = now
	if err := s.in.cfg.Queue.ChangeVisibility(ctx, ch...); err != nil && !onlyStale(err) {
		return fmt.Errorf("deadletter: keep held messages invisible: %w", err)
	}
	return nil
}

// onlyStale reports whether every failure of err is a stale receipt.
func onlyStale(err error) bool {
	var be *queue.BatchError
	if !errors.As(err, &be) {
		return false
	}
	for _, e := range be.Failed {
		if !errors.Is(e, queue.ErrReceiptInvalid) {
			return false
		}
	}
	return true
}

// wait waits d on the scan's clock, keeping the held messages invisible.
func (s *Scan) wait(ctx context.Context, d time.Duration) error {
	c := s.in.cfg.Clock
	until := c.Now().Add(d)
	for {
		left := until.Sub(c.Now())
		if left <= 0 {
			return nil
		}
		if err := clock.Sleep(ctx, c, min(left, s.in.cfg.Hold/2)); err != nil {
			return err
		}
		if err := s.extend(ctx); err != nil {
			return err
		}
	}
}

// Delete deletes entries from the dead-letter queue (with their claim-check
// blobs) and stops holding them; the error is the queue's (a
// *queue.BatchError indexes es).
func (s *Scan) Delete(ctx context.Context, es ...*Entry) error {
	msgs := make([]*queue.Message, len(es))
	for i, e := range es {
		msgs[i] = s.held[e.Message.ID]
		if msgs[i] == nil {
			msgs[i] = e.Message
		}
	}
	err := s.in.cfg.Queue.Delete(ctx, msgs...)
	for _, e := range es {
		delete(s.held, e.Message.ID)
	}
	return err
}

// Close makes every held message visible again. It outlives ctx's
// cancellation (an interrupted command must still release).
func (s *Scan) Close(ctx context.Context) {
	if len(s.held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.in.cfg.Queue.Release(ctx, slices.Collect(maps.Values(s.held))...); err != nil {
		s.in.cfg.Logger.Warn("deadletter: release held messages (they come back after the hold)", "err", err)
	}
	s.held = map[string]*queue.Message{}
}

// each scans the queue, calling fn with each batch of entries f matches
// and counting those it does not, until fn says stop, the scan ends or an
// ID filter has matched. The held messages are released at the end.
func (in *Inspector) each(ctx context.Context, s *Scan, f Filter, fn func([]*Entry) (stop bool, err error)) (notMatching int, err error) {
	for {
		batch, err := s.Next(ctx)
		if err != nil || batch == nil {
			return notMatching, err
		}
		var match []*Entry
		for _, e := range batch {
			if in.Match(f, e) {
				match = append(match, e)
			} else {
				notMatching++
			}
		}
		if len(match) == 0 {
			continue
		}
		stop, err := fn(match)
		if err != nil || stop || f.ID != "" {
			return notMatching, err
		}
	}
}

// List is a listing's outcome.
type List struct {
	Entries []*Entry
	// Looked is how many messages the scan looked at; Complete whether it
	// saw the whole queue.
	Looked   int
	Complete bool
}

// List returns up to limit entries f matches (0 = all), in the order
// received.
func (in *Inspector) List(ctx context.Context, f Filter, limit int) (List, error) {
	s := in.Scan()
	defer s.Close(ctx)
	var l List
	_, err := in.each(ctx, s, f, func(es []*Entry) (bool, error) {
		for _, e := range es {
			if limit > 0 && len(l.Entries) == limit {
				return true, nil
			}
			l.Entries = append(l.Entries, e)
		}
		return limit > 0 && len(l.Entries) == limit, nil
	})
	l.Looked, l.Complete = s.Looked(), s.Done()
	return l, err
}

// ErrNotFound reports that a scan did not find a message.
var ErrNotFound = errors.New("deadletter: no such message")

type notFound struct {
	id, queue string
	looked    int
}

func (e *notFound) Error() string {
	return fmt.Sprintf("deadletter: no message %s on %s (%d looked at)", e.id, e.queue, e.looked)
}

func (e *notFound) Is(target error) bool { return target == ErrNotFound }

// Find returns the entry whose message ID or source message ID is id.
func (in *Inspector) Find(ctx context.Context, id string) (*Entry, error) {
	l, err := in.List(ctx, Filter{ID: id}, 1)
	if err != nil {
		return nil, err
	}
	if len(l.Entries) == 0 {
		return nil, &notFound{id: id, queue: in.QueueName(), looked: l.Looked}
	}
	return l.Entries[0], nil
}

// Timestamp writes t for people and tools (RFC 3339, UTC; "-" when zero).
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Field is one line of an entry's provenance.
type Field struct{ Name, Value string }

// Provenance is what is known about where e came from, for people: its
// form, why and where it failed, and its deliveries (times in UTC, "-"
// for what is missing).
func (e *Entry) Provenance() []Field {
	d := e.Letter
	dash, at := func(s string) string { return cmp.Or(s, "-") }, Timestamp
	return []Field{{"message id", e.Message.ID}, {"form", e.Form()}, {"reason", dash(d.Reason)},
		{"task type", dash(string(d.TaskType))}, {"processor", dash(d.Processor)}, {"source queue", dash(d.SourceQueue)},
		{"attempts", strconv.Itoa(d.Attempts)}, {"worker", dash(d.Worker)}, {"failed at", at(d.Time)},
		{"source message id", dash(d.MessageID)}, {"source receives", strconv.Itoa(d.ReceiveCount)},
		{"dead-lettered at", at(e.Message.SentAt)}, {"dlq receives", strconv.Itoa(e.Message.ReceiveCount)}}
}

// ErrorLine is the entry's error on one line, cut to n runes (0 = no
// limit), "-" when there is none.
func (e *Entry) ErrorLine(n int) string {
	s := strings.Join(strings.Fields(e.Letter.Error), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:max(n-1, 0)]) + "…"
	}
	return cmp.Or(s, "-")
}

// DescribeTask describes the task a body holds for people: its format,
// and its type, attempts and properties (sorted) one per line.
func DescribeTask(body []byte) (task.Format, string, error) {
	t, err := task.Decode(body)
	if err != nil {
		return 0, "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type: %s\nattempts: %d", t.Type, t.Attempts)
	for _, k := range slices.Sorted(maps.Keys(t.Props)) {
		fmt.Fprintf(&b, "\n%s=%s", k, t.Props[k])
	}
	return task.DetectFormat(body), b.String(), nil
}
