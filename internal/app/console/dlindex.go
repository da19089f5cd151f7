package console

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
)

// Limits of the dead-letter index.
const (
	// dlPageSize is how many dead letters a page shows.
	dlPageSize = 50
	// dlBodyKept is how much of a body the index keeps; the message page
	// reads the whole message from the queue when it is longer.
	dlBodyKept = 4 << 10
	// dlFirstPageWait is how long a page waits for a scan that has not
	// yet seen a page's worth of dead letters before it shows what there
	// is (and refreshes itself).
	dlFirstPageWait = 1500 * time.Millisecond
)

// dlIndex is the console's view of the dead-letter queue (see
// docs/ARCHITECTURE.md, Console). SQS can neither list a queue nor page
// through it: a scan (pkg/deadletter) receives every message once with a
// short hold and puts it back. The index keeps what the last scan saw —
// the provenance, the error and the first dlBodyKept bytes of each body —
// and pages are pages of that snapshot, newest dead-lettered first, so
// page 2 is stable while you read it. A page starts a new scan when the
// snapshot is older than rescan (or on demand, and after every redrive or
// purge); until it ends the pages show the previous snapshot. Before the
// first scan ends the pages show what it has seen so far, and a page
// waits up to dlFirstPageWait for a page's worth.
//
// One scan, redrive or purge runs at a time (busy): a scan hides the
// messages it holds from the others. At most max dead letters are kept.
type dlIndex struct {
	in     *deadletter.Inspector
	clock  clock.Clock
	log    *slog.Logger
	rescan time.Duration
	max    int
	bg     context.Context // scans and jobs outlive requests

	busy sync.Mutex

	mu      sync.Mutex
	cur     *dlSnap // the last scan that ended; nil before the first
	next    *dlSnap // the scan running; nil when none
	gen     int
	changed chan struct{} // closed and replaced when next or cur change
	job     *dlJob        // the running or last redrive or purge
	jobs    int
}

// dlSnap is one scan's snapshot.
type dlSnap struct {
	Gen               int
	Started, Finished time.Time
	// Rows in the order received while the scan runs; newest
	// dead-lettered first once it ended.
	Rows   []*dlRow
	byID   map[string]*dlRow
	Looked int
	// Full: the scan stopped at the index's limit.
	Full  bool
	Depth queue.Depth // when the scan started
	Err   string
}

// dlRow is one dead letter in the index: the entry with its body cut to
// dlBodyKept.
type dlRow struct {
	*deadletter.Entry
	BodySize int
	BodyCut  bool
}

func newDLIndex(bg context.Context, in *deadletter.Inspector, c clock.Clock, log *slog.Logger, rescan time.Duration, max int) *dlIndex {
	return &dlIndex{in: in, clock: c, log: log, rescan: rescan, max: max, bg: bg, changed: make(chan struct{})}
}

func newRow(e *deadletter.Entry) *dlRow {
	r := &dlRow{Entry: e, BodySize: len(e.Letter.Body)}
	if r.BodySize > dlBodyKept {
		r.BodyCut = true
		l := *e.Letter
		l.Body = bytes.Clone(l.Body[:dlBodyKept])
		e.Letter = &l
	}
	m := *e.Message
	m.Body = nil // the letter holds what is shown
	e.Message = &m
	return r
}

func (x *dlIndex) notifyLocked() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// refresh starts a scan when none runs and the snapshot is missing, older
// than rescan, or force.
func (x *dlIndex) refresh(force bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked(force)
}

func (x *dlIndex) refreshLocked(force bool) {
	if x.next != nil || x.job.running() {
		return
	}
	if !force && x.cur != nil && x.clock.Now().Sub(x.cur.Finished) < x.rescan {
		return
	}
	x.gen++
	x.next = &dlSnap{Gen: x.gen, Started: x.clock.Now(), byID: map[string]*dlRow{}}
	x.notifyLocked()
	go x.scan(x.next)
}

// scan fills snap and makes it the current snapshot.
func (x *dlIndex) scan(snap *dlSnap) {
	x.busy.Lock()
	defer x.busy.Unlock()
	ctx := x.bg
	d, derr := x.in.Depth(ctx)
	s := x.in.Scan()
	var err error
	for !snap.Full {
		var batch []*deadletter.Entry
		if batch, err = s.Next(ctx); err != nil || batch == nil {
			break
		}
		x.mu.Lock()
		for _, e := range batch {
			if len(snap.Rows) == x.max {
				snap.Full = true
				break
			}
			r := newRow(e)
			snap.Rows = append(snap.Rows, r)
			snap.byID[e.Message.ID] = r
		}
		snap.Looked = s.Looked()
		x.notifyLocked()
		x.mu.Unlock()
	}
	s.Close(ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	sortRows(snap.Rows)
	snap.Finished, snap.Depth = x.clock.Now(), d
	switch {
	case err != nil:
		snap.Err = err.Error()
	case derr != nil:
		snap.Err = "depth: " + derr.Error()
	}
	if err != nil {
		x.log.Warn("console: dead-letter scan", "err", err)
	}
	x.cur, x.next = snap, nil
	x.notifyLocked()
}

// sortRows puts the newest dead letters first (then by ID, for a stable
// order).
func sortRows(rows []*dlRow) {
	slices.SortStableFunc(rows, func(a, b *dlRow) int {
		return cmp.Or(b.Time().Compare(a.Time()), cmp.Compare(a.Message.ID, b.Message.ID))
	})
}

// dlView is what a page shows of the index.
type dlView struct {
	Snap     *dlSnap // the snapshot shown (nil: no scan has run)
	Scanning bool    // a scan is running
	Partial  bool    // Snap is the running scan (no scan has ended yet)
	// NextLooked is how many the running scan has looked at.
	NextLooked int
	Rows       []*dlRow // this page
	Matching   int      // rows of the snapshot the filter matches
	Page       int      // 1-based
	Pages      int
	Job        *dlJob
}

// view returns page (1-based) of the rows f matches. Before any scan has
// ended it waits up to wait for the running scan to see enough rows.
func (x *dlIndex) view(ctx context.Context, f deadletter.Filter, page int, wait time.Duration) dlView {
	page = max(page, 1)
	t := x.clock.NewTimer(wait)
	defer t.Stop()
	for {
		x.mu.Lock()
		v := dlView{Scanning: x.next != nil, Page: page, Job: x.job.copy()}
		snap := x.cur
		if x.next != nil {
			v.NextLooked = x.next.Looked
		}
		if snap == nil && x.next != nil {
			snap, v.Partial = x.next, true
		}
		var match []*dlRow
		if snap != nil {
			for _, r := range snap.Rows {
				if x.in.Match(f, r.Entry) {
					match = append(match, r)
				}
			}
			v.Snap = snap.header()
		}
		ch := x.changed
		x.mu.Unlock()
		if !v.Partial || len(match) >= page*dlPageSize {
			return x.paginate(v, match)
		}
		select {
		case <-ch:
			continue
		case <-t.C():
		case <-ctx.Done():
		}
		return x.paginate(v, match)
	}
}

func (x *dlIndex) paginate(v dlView, match []*dlRow) dlView {
	if v.Partial {
		match = slices.Clone(match)
		sortRows(match)
	}
	v.Matching = len(match)
	v.Pages = max(1, (len(match)+dlPageSize-1)/dlPageSize)
	lo := min((v.Page-1)*dlPageSize, len(match))
	v.Rows = match[lo:min(lo+dlPageSize, len(match))]
	return v
}

// row returns the dead letter id (message ID or source message ID) of the
// snapshot shown, or nil.
func (x *dlIndex) row(id string) *dlRow {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range []*dlSnap{x.cur, x.next} {
		if s == nil {
			continue
		}
		if r := s.byID[id]; r != nil {
			return r
		}
		for _, r := range s.Rows {
			if r.Is(id) {
				return r
			}
		}
	}
	return nil
}

// matching returns the rows of the snapshot shown that f matches, and the
// snapshot's header.
func (x *dlIndex) matching(f deadletter.Filter) ([]*dlRow, *dlSnap) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := cmp.Or(x.cur, x.next)
	if s == nil {
		return nil, nil
	}
	var out []*dlRow
	for _, r := range s.Rows {
		if x.in.Match(f, r.Entry) {
			out = append(out, r)
		}
	}
	return out, s.header()
}

// header is a copy of s without its rows, for a page (the scan goes on
// changing s).
func (s *dlSnap) header() *dlSnap {
	c := *s
	c.Rows, c.byID = nil, nil
	return &c
}

// forget removes dead letters a job redrove or deleted from the snapshots.
func (x *dlIndex) forget(ids map[string]bool, all bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range []*dlSnap{x.cur, x.next} {
		if s == nil {
			continue
		}
		s.Rows = slices.DeleteFunc(s.Rows, func(r *dlRow) bool { return all || ids[r.Message.ID] })
		for id := range s.byID {
			if all || ids[id] {
				delete(s.byID, id)
			}
		}
	}
	x.notifyLocked()
}

// idle waits until no scan or job runs, or ctx ends.
func (x *dlIndex) idle(ctx context.Context) error {
	for {
		x.mu.Lock()
		busy, ch := x.next != nil || x.job.running(), x.changed
		x.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// current returns the running or last job (a copy), or nil.
func (x *dlIndex) current() *dlJob {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.job.copy()
}

// find reads one message whole from the queue (when the index cut its
// body). It does not wait for a running scan or job.
func (x *dlIndex) find(ctx context.Context, id string) (*deadletter.Entry, error) {
	if !x.busy.TryLock() {
		return nil, errBusy
	}
	defer x.busy.Unlock()
	return x.in.Find(ctx, id)
}

var errBusy = fmt.Errorf("the dead-letter queue is being scanned, redriven or purged; try again when it is done")

// dlJob is a redrive or purge the console runs in the background.
type dlJob struct {
	ID                int
	Kind              string // "redrive" or "purge"
	User              string
	Filter            string
	Rate              float64
	Started, Finished time.Time
	Done              bool
	Redrive           deadletter.RedriveStats
	Purge             deadletter.PurgeResult
	Summary, Err      string
}

func (j *dlJob) running() bool { return j != nil && !j.Done }

// copy returns a copy for a page (nil for nil).
func (j *dlJob) copy() *dlJob {
	if j == nil {
		return nil
	}
	c := *j
	return &c
}

// start runs fn as the index's job, unless one runs already.
func (x *dlIndex) start(j *dlJob, fn func(ctx context.Context, j *dlJob, update func(func(*dlJob)))) bool {
	x.mu.Lock()
	if x.job.running() {
		x.mu.Unlock()
		return false
	}
	x.jobs++
	j.ID, j.Started = x.jobs, x.clock.Now()
	x.job = j
	x.mu.Unlock()
	go func() {
		x.busy.Lock()
		update := func(f func(*dlJob)) {
			x.mu.Lock()
			f(x.job)
			x.notifyLocked()
			x.mu.Unlock()
		}
		fn(x.bg, j, update)
		x.busy.Unlock()
		x.mu.Lock()
		defer x.mu.Unlock()
		x.job.Done, x.job.Finished = true, x.clock.Now()
		x.refreshLocked(true) // what the job changed, seen by a new scan
		x.notifyLocked()
	}()
	return true
}
