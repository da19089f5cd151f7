package derive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/evidence"
)

// Sources are Mill's records the events are derived from.
type Sources struct {
	Bits  bitlog.Checked
	Audit auditlog.Between
}

// CursorKey is the blob of the log where the appender keeps its cursor.
const CursorKey = "appender/cursor.json"

// The sources, in the order a pass reads them.
const (
	SourceBitlog   = "bitlog"
	SourceAuditlog = "auditlog"
)

var sourceOrder = []string{SourceBitlog, SourceAuditlog}

// Cursor is where the appender got to. Every record of a source timed
// before Done is in the log; a pass in progress covers [Done, Until) and
// is at page After of Source.
type Cursor struct {
	V      int       `json:"v"`
	Done   time.Time `json:"done"`
	Until  time.Time `json:"until,omitzero"`
	Source string    `json:"source,omitempty"`
	After  string    `json:"after,omitempty"`
	// LogSize is the log's size when the cursor was saved (for people).
	LogSize int64 `json:"logSize"`
}

// Appender derives events from Sources and appends them to Log.
type Appender struct {
	Log     *evidence.Log
	Blobs   blob.Store // the log's blobs, which hold the cursor
	Sources Sources
	Users   Users
	// Settle: a pass derives the records timed before now-Settle, so a
	// record written late (a queued audit event, a check recorded after
	// its time) is still in its period. A record written later than that
	// is missed, and the cross-check names it.
	Settle time.Duration
	// Start is where the first pass starts (no cursor yet).
	Start time.Time
	// Page is how many records a page reads, and so the most events one
	// Append adds (at most the log's deduplication window, so a page
	// appended again after a crash is dropped whole).
	Page   int
	Clock  clock.Clock
	Logger *slog.Logger
	// Verifier is the log's verifier key. A log with events and no cursor
	// (lost, or removed as unreadable) is read whole with it first, and
	// no event it holds is appended again, however far back the pass
	// starts.
	Verifier note.Verifier

	seen map[string]bool // the log's event IDs, when read whole
}

// Summary is what one Run did.
type Summary struct {
	From, Until time.Time
	Records     int      // records read
	Appended    int      // events added to the log
	Duplicates  int      // events the log held already (a page appended again)
	Conflicts   []string // event IDs the log holds with other content
	Underivable []string // records that cannot be an event, and why
	Checkpoint  *evidence.Checkpoint
}

// LoadCursor reads the cursor; ok is false when there is none yet.
func LoadCursor(ctx context.Context, b blob.Store) (c Cursor, ok bool, err error) {
	raw, err := b.Get(ctx, CursorKey)
	if errors.Is(err, blob.ErrNotFound) {
		return Cursor{}, false, nil
	}
	if err != nil {
		return Cursor{}, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.V != 1 || (c.Source != "" && c.Source != SourceBitlog && c.Source != SourceAuditlog) {
		return Cursor{}, false, fmt.Errorf("evidence cursor %s: unreadable (%v): remove it and append with --start", CursorKey, err)
	}
	return c, true, nil
}

func (a *Appender) save(ctx context.Context, c Cursor) error {
	c.V = 1
	if cp := a.Log.Checkpoint(); cp != nil {
		c.LogSize = cp.Size
	}
	b, _ := json.Marshal(c) // a Cursor always marshals
	return a.Blobs.Put(ctx, CursorKey, b)
}

// Run makes one pass: it derives the events of the records timed in
// [cursor, now-Settle) and appends them, a page at a time, saving the
// cursor after each page. Killed at any moment, the next Run goes on from
// the last saved cursor: the page it derives again was the log's last
// Append, whose events the log drops as duplicates — none lost, none twice.
func (a *Appender) Run(ctx context.Context) (Summary, error) {
	if a.Page <= 0 || a.Page > evidence.DefaultDedupWindow {
		a.Page = 1000
	}
	if a.Clock == nil {
		a.Clock = clock.Real{}
	}
	if a.Logger == nil {
		a.Logger = slog.New(slog.DiscardHandler)
	}
	c, ok, err := LoadCursor(ctx, a.Blobs)
	if err != nil {
		return Summary{}, err
	}
	if !ok {
		c = Cursor{Done: a.Start.UTC()}
		if cp := a.Log.Checkpoint(); cp != nil && cp.Size > 0 {
			if err := a.readSeen(ctx); err != nil {
				return Summary{}, err
			}
		}
	}
	if c.Until.IsZero() {
		c.Until = a.Clock.Now().Add(-a.Settle).UTC().Truncate(time.Millisecond)
		c.Source, c.After = SourceBitlog, ""
	}
	sum := Summary{From: c.Done, Until: c.Until, Checkpoint: a.Log.Checkpoint()}
	if !c.Until.After(c.Done) {
		return sum, nil // nothing has settled since the last pass
	}
	start := max(slices.Index(sourceOrder, c.Source), 0)
	for i := start; i < len(sourceOrder); i++ {
		src := sourceOrder[i]
		if i > start {
			c.Source, c.After = src, ""
		}
		for {
			events, next, err := a.page(ctx, src, c, &sum)
			if err != nil {
				return sum, err
			}
			if err := a.append(ctx, events, &sum); err != nil {
				return sum, err
			}
			c.After = next
			if err := a.save(ctx, c); err != nil {
				return sum, err
			}
			if next == "" {
				break
			}
		}
	}
	c = Cursor{Done: c.Until}
	if err := a.save(ctx, c); err != nil {
		return sum, err
	}
	return sum, nil
}

// page reads one page of src and derives its events.
func (a *Appender) page(ctx context.Context, src string, c Cursor, sum *Summary) ([]*evidence.Event, string, error) {
	var events []*evidence.Event
	keep := func(e *evidence.Event, err error) {
		switch {
		case err != nil:
			sum.Underivable = append(sum.Underivable, err.Error())
			a.Logger.Warn("evidence: record cannot be an event", "error", err)
		case e != nil:
			events = append(events, e)
		}
	}
	switch src {
	case SourceBitlog:
		rows, next, err := a.Sources.Bits.Checked(ctx, c.Done, c.Until, c.After, a.Page)
		if err != nil {
			return nil, "", err
		}
		sum.Records += len(rows)
		for _, r := range rows {
			keep(FromRow(r, a.Users))
		}
		return events, next, nil
	default:
		es, next, err := a.Sources.Audit.Between(ctx, c.Done, c.Until, c.After, a.Page)
		if err != nil {
			return nil, "", err
		}
		sum.Records += len(es)
		for _, en := range es {
			keep(FromEntry(en, a.Users))
		}
		return events, next, nil
	}
}

// readSeen reads the IDs of the whole log.
func (a *Appender) readSeen(ctx context.Context) error {
	if a.Verifier == nil {
		return errors.New("evidence: the log holds events but has no cursor: give the verifier key to read it first")
	}
	a.seen = map[string]bool{}
	_, err := evidence.Events(ctx, a.Blobs, a.Verifier, func(_ int64, e *evidence.Event) error {
		a.seen[e.ID] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("evidence: the log has no cursor, and reading its events failed: %w", err)
	}
	a.Logger.Warn("evidence: no cursor: the log's events were read so that none is appended twice", "events", len(a.seen))
	return nil
}

func (a *Appender) append(ctx context.Context, events []*evidence.Event, sum *Summary) error {
	if a.seen != nil {
		kept := events[:0]
		for _, e := range events {
			if a.seen[e.ID] {
				sum.Duplicates++
				continue
			}
			kept = append(kept, e)
		}
		events = kept
	}
	if len(events) == 0 {
		return nil
	}
	res, err := a.Log.Append(ctx, events)
	if err != nil {
		return err
	}
	sum.Appended += res.Appended
	sum.Duplicates += len(res.Duplicates)
	sum.Conflicts = append(sum.Conflicts, res.Conflicts...)
	for _, id := range res.Conflicts {
		a.Logger.Warn("evidence: the log holds this event with other content: its record changed", "event", id)
	}
	sum.Checkpoint = res.Checkpoint
	return nil
}

// EnvSignerKey is the environment variable that holds the log's signer key
// itself when no key file is named.
const EnvSignerKey = "MILL_EVIDENCE_SIGNER_KEY"
