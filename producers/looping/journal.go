package looping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/millfleet/mill/pkg/blob"
)

// The stores keep a State as a base and a journal, so that a save writes
// what changed, not the whole state (docs/ARCHITECTURE.md, Looping
// producers):
//
//   - the base, at the store's own name (the file path, the S3 key): the
//     whole state as JSON, with the generation of its journal;
//   - the journal, entries named NAME.journal/GENERATION/SEQ: entry n holds
//     the run fields (RunFields: cursor, counts of bites…), the task counts that
//     changed and the morsels that changed since entry n-1.
//
// Each blob is written atomically, and a save is one blob, so a crash at
// any point leaves the previous state or the new one. Load reads the base
// and applies its generation's entries 1, 2, … in order. A save writes a
// new base of the next generation (a compaction) when the morsels are not
// those of the base (a new run), when the journal would outgrow the base
// (so the bytes a compaction writes are paid for by the journal bytes
// before it: every save costs O(change), amortised), when it holds
// entryCap entries (bounding the reads of a load: at least maxEntries,
// more for a larger base, so that compactions stay paid for by the
// entries before them however large the state), and after a failed
// write (whose outcome is unknown); it then deletes the entries of older
// generations. A version 1 state (one object, before the journal) loads
// as a base without a journal, and the first save rewrites it.

// maxEntries is the entry cap of a journal over a small base (a load
// reads each entry).
var maxEntries = 1000

// entryFloor is the size an entry is counted at when the cap grows with
// the base: one entry per entryFloor bytes of base. An entry holds at
// least the run fields and the changed counts, so entries are rarely
// smaller; a compaction forced by the cap then writes at most about
// entryFloor/(entry size) times the bytes the journal wrote since the
// last one, a constant, and the state's bytes stay proportional to the
// change (BenchmarkDupproducerState).
var entryFloor = 256

// entryCap is the number of entries a journal over a base of baseBytes
// may hold.
func entryCap(baseBytes int) int { return max(maxEntries, baseBytes/entryFloor) }

// loadWorkers is how many journal entries a load reads at once.
const loadWorkers = 16

// base is the stored form of a base: the state and its generation.
type base struct {
	*State
	Generation int64 `json:"generation,omitempty"`
}

// entry is the stored form of a journal entry.
type entry struct {
	Version    int       `json:"version"`
	Generation int64     `json:"generation"`
	Seq        int       `json:"seq"`
	Header     RunFields `json:"header"`
	// Queued holds the task counts that changed (their new values).
	Queued  Counts          `json:"queued,omitempty"`
	Morsels []indexedMorsel `json:"morsels,omitempty"`
}

type indexedMorsel struct {
	Index int `json:"i"`
	Morsel
}

// journal is a StateStore on a blob.Store, whose keys it names.
type journal struct {
	b    blob.Store
	name string // the base's name
	desc string // String()

	mu sync.Mutex
	// What is stored, as this store last loaded or saved it; known is
	// false when that is not known (nothing loaded or saved yet, or a
	// write failed).
	known        bool
	gen          int64
	seq          int
	baseBytes    int
	journalBytes int
	last         *State
	// written counts the bytes and blobs saves wrote (for the benchmark).
	written, blobsWritten int64
}

func newJournal(b blob.Store, name, desc string) *journal {
	return &journal{b: b, name: name, desc: desc}
}

func (j *journal) String() string { return j.desc }

func (j *journal) prefix() string { return j.name + ".journal/" }

func (j *journal) entryName(gen int64, seq int) string {
	return fmt.Sprintf("%s%016d/%010d", j.prefix(), gen, seq)
}

// parseEntryName returns the generation and sequence number of an entry
// name (ok false for anything else).
func (j *journal) parseEntryName(name string) (gen int64, seq int, ok bool) {
	rest, found := strings.CutPrefix(name, j.prefix())
	if !found {
		return 0, 0, false
	}
	g, s, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	gen, err1 := strconv.ParseInt(g, 10, 64)
	seq, err2 := strconv.Atoi(s)
	return gen, seq, err1 == nil && err2 == nil && gen > 0 && seq > 0
}

// Load implements StateStore.
func (j *journal) Load(ctx context.Context) (*State, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	// An entry that vanishes between the listing and its read was
	// compacted away by a writer meanwhile: read again.
	for range 3 {
		var st *State
		if st, err = j.load(ctx); !errors.Is(err, blob.ErrNotFound) {
			return st, err
		}
	}
	return nil, fmt.Errorf("looping: load state %s: %w: the journal kept changing while read (%v)", j.desc, ErrState, err)
}

func (j *journal) load(ctx context.Context) (*State, error) {
	raw, err := j.b.Get(ctx, j.name)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("looping: load state %s: %w", j.desc, ErrNoState)
	}
	if err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w", j.desc, err)
	}
	bs := base{State: &State{}}
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w: %v", j.desc, ErrState, err)
	}
	st := bs.State
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w", j.desc, err)
	}
	if st.Version == 1 && bs.Generation != 0 || bs.Generation < 0 {
		return nil, fmt.Errorf("looping: load state %s: %w: generation %d with version %d", j.desc, ErrState, bs.Generation, st.Version)
	}
	var names []string
	jbytes := 0
	if bs.Generation > 0 {
		all, err := j.b.List(ctx, j.prefix())
		if err != nil {
			return nil, fmt.Errorf("looping: load state %s: list journal: %w", j.desc, err)
		}
		seqs := map[int]string{}
		for _, n := range all {
			if g, s, ok := j.parseEntryName(n); ok && g == bs.Generation {
				seqs[s] = n
			}
		}
		// Entries 1, 2, … in order; one beyond a gap was never part of
		// a save that completed after it (saves are sequential).
		for s := 1; seqs[s] != ""; s++ {
			names = append(names, seqs[s])
		}
		entries, sizes, err := j.readEntries(ctx, names)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			if e.Version != StateVersion || e.Generation != bs.Generation || e.Seq != i+1 {
				return nil, fmt.Errorf("looping: load state %s: %w: entry %s says version %d, generation %d, seq %d",
					j.desc, ErrState, names[i], e.Version, e.Generation, e.Seq)
			}
			if err := e.apply(st); err != nil {
				return nil, fmt.Errorf("looping: load state %s: entry %s: %w", j.desc, names[i], err)
			}
			jbytes += sizes[i]
		}
		if err := st.validate(); err != nil {
			return nil, fmt.Errorf("looping: load state %s: after %d journal entries: %w", j.desc, len(names), err)
		}
	}
	j.known, j.gen, j.seq, j.baseBytes, j.journalBytes = true, bs.Generation, len(names), len(raw), jbytes
	j.last = st.clone()
	return st, nil
}

// readEntries reads and decodes the named entries, loadWorkers at a time.
func (j *journal) readEntries(ctx context.Context, names []string) ([]entry, []int, error) {
	out := make([]entry, len(names))
	sizes := make([]int, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(loadWorkers)
	for i, n := range names {
		g.Go(func() error {
			b, err := j.b.Get(gctx, n)
			if err != nil {
				return fmt.Errorf("looping: load state %s: entry %s: %w", j.desc, n, err)
			}
			sizes[i] = len(b)
			if err := json.Unmarshal(b, &out[i]); err != nil {
				return fmt.Errorf("looping: load state %s: entry %s: %w: %v", j.desc, n, ErrState, err)
			}
			return nil
		})
	}
	return out, sizes, g.Wait()
}

// apply brings st up to date with e.
func (e *entry) apply(st *State) error {
	st.RunFields = e.Header
	if st.Queued == nil {
		st.Queued = Counts{}
	}
	for typ, m := range e.Queued {
		for acct, n := range m {
			if n < 0 {
				return fmt.Errorf("%w: negative count %s/%s", ErrState, typ, acct)
			}
			st.Queued.Add(typ, acct, n-st.Queued[typ][acct])
		}
	}
	for _, im := range e.Morsels {
		if im.Index < 0 || im.Index >= len(st.Morsels) || im.ID != st.Morsels[im.Index].ID {
			return fmt.Errorf("%w: morsel %d (%q) is not one of the base's %d", ErrState, im.Index, im.ID, len(st.Morsels))
		}
		st.Morsels[im.Index] = im.Morsel
	}
	return nil
}

// Save implements StateStore.
func (j *journal) Save(ctx context.Context, s *State) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.known && j.gen > 0 && sameMorsels(j.last, s) && j.seq < entryCap(j.baseBytes) {
		e, ok := j.diff(s)
		if ok {
			b, err := encodeJSON(e)
			if err != nil {
				return err
			}
			if j.journalBytes+len(b) <= j.baseBytes {
				name := j.entryName(j.gen, j.seq+1)
				if err := j.b.Put(ctx, name, b); err != nil {
					j.known = false // written or not: the next save compacts
					return fmt.Errorf("looping: save state %s: %w", j.desc, err)
				}
				j.count(len(b))
				j.seq++
				j.journalBytes += len(b)
				j.last.update(s, e.Morsels)
				return nil
			}
		}
	}
	return j.compact(ctx, s)
}

// compact writes s as the base of a new generation and deletes the
// entries of the older ones.
func (j *journal) compact(ctx context.Context, s *State) error {
	gen := j.gen + 1
	if !j.known {
		// The stored generation is unknown (first save of this store,
		// or a failed write): read it, so the new one is above it.
		raw, err := j.b.Get(ctx, j.name)
		switch {
		case errors.Is(err, blob.ErrNotFound):
		case err != nil:
			return fmt.Errorf("looping: save state %s: %w", j.desc, err)
		default:
			var bs base
			_ = json.Unmarshal(raw, &bs) // an unreadable base is replaced
			gen = max(gen, bs.Generation+1)
		}
	}
	v := *s
	v.Version = StateVersion
	b, err := encodeJSON(base{State: &v, Generation: gen})
	if err != nil {
		return err
	}
	if err := j.b.Put(ctx, j.name, b); err != nil {
		j.known = false
		return fmt.Errorf("looping: save state %s: %w", j.desc, err)
	}
	j.count(len(b))
	j.known, j.gen, j.seq, j.baseBytes, j.journalBytes = true, gen, 0, len(b), 0
	j.last = v.clone()
	// The old generations' entries are garbage now. The new base is
	// saved whatever happens next; a failure to delete them is reported
	// (a state store that fails is the invocation's failure) and the next
	// compaction deletes them.
	all, err := j.b.List(ctx, j.prefix())
	if err == nil {
		var old []string
		for _, n := range all {
			if g, _, ok := j.parseEntryName(n); !ok || g != gen {
				old = append(old, n)
			}
		}
		if len(old) > 0 {
			err = j.b.Delete(ctx, old...)
		}
	}
	if err != nil {
		return fmt.Errorf("looping: save state %s: delete old journal entries: %w", j.desc, err)
	}
	return nil
}

func (j *journal) count(n int) {
	j.written += int64(n)
	j.blobsWritten++
}

// diff returns the entry that takes j.last to s (ok false when a task
// count disappeared, which only a new run does: compact then).
func (j *journal) diff(s *State) (entry, bool) {
	e := entry{Version: StateVersion, Generation: j.gen, Seq: j.seq + 1, Header: s.RunFields}
	for typ, m := range j.last.Queued {
		for acct := range m {
			if _, ok := s.Queued[typ][acct]; !ok {
				return e, false
			}
		}
	}
	for typ, m := range s.Queued {
		for acct, n := range m {
			if old, ok := j.last.Queued[typ][acct]; !ok || old != n {
				if e.Queued == nil {
					e.Queued = Counts{}
				}
				e.Queued.Add(typ, acct, n)
			}
		}
	}
	for i := range s.Morsels {
		if !equalMorsel(&j.last.Morsels[i], &s.Morsels[i]) {
			e.Morsels = append(e.Morsels, indexedMorsel{Index: i, Morsel: s.Morsels[i]})
		}
	}
	return e, true
}

func sameMorsels(a, b *State) bool {
	if len(a.Morsels) != len(b.Morsels) {
		return false
	}
	for i := range a.Morsels {
		if a.Morsels[i].ID != b.Morsels[i].ID {
			return false
		}
	}
	return true
}

func equalMorsel(a, b *Morsel) bool {
	return a.ID == b.ID && a.Marker == b.Marker && a.DeletesMarker == b.DeletesMarker && a.DeletesDone == b.DeletesDone && a.Done == b.Done &&
		a.Skipped == b.Skipped && a.Failed == b.Failed && a.Failures == b.Failures && a.Queued == b.Queued &&
		bytes.Equal(a.Data, b.Data)
}

// clone returns a deep copy of s.
func (s *State) clone() *State {
	c := *s
	c.Morsels = slices.Clone(s.Morsels)
	for i := range c.Morsels {
		c.Morsels[i].Data = bytes.Clone(c.Morsels[i].Data)
	}
	c.Queued = s.Queued.Clone()
	return &c
}

// update makes s (a clone) equal to n, whose changed morsels are changed.
func (s *State) update(n *State, changed []indexedMorsel) {
	morsels := s.Morsels
	*s = *n
	s.Morsels = morsels
	s.Queued = n.Queued.Clone()
	for _, im := range changed {
		m := im.Morsel
		m.Data = bytes.Clone(m.Data)
		s.Morsels[im.Index] = m
	}
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("looping: encode state: %w", err)
	}
	return buf.Bytes(), nil
}
