package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sync/errgroup"
)

// TileHeight is the height of the log's tiles: 256 hashes (or leaves) a
// tile.
const TileHeight = 8

// The keys of the checkpoints.
const (
	latestKey     = "checkpoint"
	historyPrefix = "checkpoints/"
)

// historyKey is the key of the checkpoint of a tree of size n: zero-padded,
// so the keys sort by size.
func historyKey(n int64) string { return fmt.Sprintf("%s%020d", historyPrefix, n) }

// DefaultDedupWindow is Options.DedupWindow's default: the last 65,536
// leaves (256 data tiles read when the log opens).
const DefaultDedupWindow = 1 << 16

// Options tune a Log.
type Options struct {
	// DedupWindow is how many of the latest leaves' IDs the log holds to
	// drop an event appended again; 0 means DefaultDedupWindow.
	DedupWindow int
	// Parallel is how many blobs a batch writes at once; 0 means 8.
	Parallel int
}

// defaultOptions holds the values Open gives an Options' zero or negative
// fields.
var defaultOptions = Options{DedupWindow: DefaultDedupWindow, Parallel: 8}

// Log appends events to a tamper-evident log kept in blob.Store. Its methods
// are safe for concurrent use; one Log (one process) may write a log.
type Log struct {
	blobs    blob.Store
	signer   note.Signer
	verifier note.Verifier
	opts     Options

	mu sync.Mutex
	// stale is set when a batch failed part-way: what it wrote may include
	// its checkpoint, so the next Append reads the log's state again.
	stale   bool
	latest  *Checkpoint
	partial [][]byte // the leaves of the last, partial data tile
	ids     map[string]tlog.Hash
	order   []string // the IDs of ids, oldest first
}

// AppendResult is what one Append did.
type AppendResult struct {
	Appended int // events added to the log
	// Duplicates are the IDs of events dropped because the log (or the
	// batch) already holds their ID with the same bytes; Conflicts those
	// dropped because it holds their ID with other bytes.
	Duplicates, Conflicts []string
	Checkpoint            *Checkpoint // the log's checkpoint after the append
}

// VerifierKey returns the verifier key of a note signer key: what an
// auditor is given to check the log.
func VerifierKey(skey string) (string, error) {
	f := strings.SplitN(strings.TrimSpace(skey), "+", 5)
	if len(f) != 5 || f[0] != "PRIVATE" || f[1] != "KEY" {
		return "", errors.New("evidence: signer key: malformed")
	}
	raw, err := base64.StdEncoding.DecodeString(f[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("evidence: signer key: not an Ed25519 note key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(f[2], pub)
}

// Open opens the log in blobs for appending with the signer key (a note
// signer key). An empty store is an empty log. Open reads the newest
// checkpoint (repairing the latest one when a writer died between writing
// the checkpoint history and the latest), the last data tile, and the IDs
// of the deduplication window; it fails when what it reads does not
// verify.
func Open(ctx context.Context, blobs blob.Store, skey string, opts Options) (*Log, error) {
	s, err := NewSigner(skey)
	if err != nil {
		return nil, err
	}
	vkey, err := VerifierKey(skey)
	if err != nil {
		return nil, err
	}
	v, err := NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	defaults.FillNonPositive(&opts, defaultOptions)
	l := &Log{blobs: blobs, signer: s, verifier: v, opts: opts, ids: map[string]tlog.Hash{}}
	if err := l.load(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// load reads the log's state: its newest checkpoint, partial tile and IDs.
func (l *Log) load(ctx context.Context) error {
	cp, err := l.newestCheckpoint(ctx)
	if err != nil {
		return err
	}
	l.latest = cp
	if cp.Size == 0 {
		return nil
	}
	from := max(0, cp.Size-int64(l.opts.DedupWindow))
	from -= from % (1 << TileHeight)
	hr := tlog.TileHashReader(cp.Tree(), &tileReader{blobs: l.blobs, ctx: ctx})
	for start := from; start < cp.Size; start += 1 << TileHeight {
		t := dataTile(start, cp.Size)
		leaves, err := readDataTile(ctx, l.blobs, t)
		if err != nil {
			return err
		}
		idx := make([]int64, len(leaves))
		for i := range leaves {
			idx[i] = tlog.StoredHashIndex(0, start+int64(i))
		}
		hashes, err := hr.ReadHashes(idx)
		if err != nil {
			return fmt.Errorf("evidence: open: hash tiles do not match checkpoint %d: %w", cp.Size, err)
		}
		for i, leaf := range leaves {
			h := tlog.RecordHash(leaf)
			if h != hashes[i] {
				return fmt.Errorf("evidence: open: leaf %d in %s does not match its hash tile", start+int64(i), t.Path())
			}
			e, err := ParseCanonical(leaf)
			if err != nil {
				return fmt.Errorf("evidence: open: leaf %d: %w", start+int64(i), err)
			}
			l.remember(e.ID, h)
		}
		if t.W < 1<<TileHeight {
			l.partial = leaves
		}
	}
	return nil
}

// newestCheckpoint returns the newest checkpoint of the history (or the
// empty tree's), writing it as the latest when the latest is older.
func (l *Log) newestCheckpoint(ctx context.Context) (*Checkpoint, error) {
	keys, err := l.blobs.List(ctx, historyPrefix)
	if err != nil {
		return nil, fmt.Errorf("evidence: open: list checkpoints: %w", err)
	}
	latest, err := getBlob(ctx, l.blobs, latestKey)
	if errors.Is(err, blob.ErrNotFound) && len(keys) == 0 {
		root, err := tlog.TreeHash(0, nil)
		if err != nil {
			return nil, err
		}
		return &Checkpoint{Origin: l.signer.Name(), Size: 0, Root: root}, nil
	}
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("evidence: open: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("evidence: open: a latest checkpoint but no checkpoint history")
	}
	newestKey := keys[len(keys)-1]
	msg, err := getBlob(ctx, l.blobs, newestKey)
	if err != nil {
		return nil, fmt.Errorf("evidence: open: %w", err)
	}
	cp, err := OpenCheckpoint(msg, l.verifier)
	if err != nil {
		return nil, fmt.Errorf("evidence: open: %s: %w", newestKey, err)
	}
	if historyKey(cp.Size) != newestKey {
		return nil, fmt.Errorf("evidence: open: %s holds the checkpoint of size %d", newestKey, cp.Size)
	}
	if !bytes.Equal(latest, msg) {
		if latest != nil {
			if lc, err := OpenCheckpoint(latest, l.verifier); err == nil && lc.Size > cp.Size {
				return nil, fmt.Errorf("evidence: open: the latest checkpoint (size %d) is newer than the history's newest (%d)", lc.Size, cp.Size)
			}
		}
		if err := l.blobs.Put(ctx, latestKey, msg); err != nil {
			return nil, fmt.Errorf("evidence: open: repair the latest checkpoint: %w", err)
		}
	}
	return cp, nil
}

// remember adds an ID to the deduplication window.
func (l *Log) remember(id string, h tlog.Hash) {
	l.ids[id] = h
	l.order = append(l.order, id)
	for len(l.order) > l.opts.DedupWindow {
		delete(l.ids, l.order[0])
		l.order = l.order[1:]
	}
}

// Checkpoint returns the log's latest checkpoint.
func (l *Log) Checkpoint() *Checkpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest
}

// Append adds a batch of events: it writes their data and hash tiles, then
// a signed checkpoint. Every event is validated first (one invalid event
// fails the batch, which writes nothing). Events whose ID the log holds
// (within its window) are dropped. When Append fails the batch may or may
// not be committed: append it again (the IDs make that safe).
func (l *Log) Append(ctx context.Context, events []*Event) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale {
		l.latest, l.partial, l.ids, l.order = nil, nil, map[string]tlog.Hash{}, nil
		if err := l.load(ctx); err != nil {
			return AppendResult{}, err
		}
		l.stale = false
	}
	var res AppendResult
	var leaves [][]byte
	batch := map[string]tlog.Hash{}
	for _, e := range events {
		b, err := e.Canonical()
		if err != nil {
			return AppendResult{}, err
		}
		h := tlog.RecordHash(b)
		old, ok := l.ids[e.ID]
		if !ok {
			old, ok = batch[e.ID]
		}
		switch {
		case ok && old == h:
			res.Duplicates = append(res.Duplicates, e.ID)
		case ok:
			res.Conflicts = append(res.Conflicts, e.ID)
		default:
			batch[e.ID] = h
			leaves = append(leaves, b)
		}
	}
	if len(leaves) == 0 {
		res.Checkpoint = l.latest
		return res, nil
	}
	cp, err := l.write(ctx, leaves)
	if err != nil {
		l.stale = true
		return AppendResult{}, err
	}
	l.latest = cp
	all := append(l.partial, leaves...)
	l.partial = all[len(all)-int(cp.Size%(1<<TileHeight)):]
	if cp.Size%(1<<TileHeight) == 0 {
		l.partial = nil
	}
	for _, e := range events {
		if h, ok := batch[e.ID]; ok {
			l.remember(e.ID, h)
			delete(batch, e.ID)
		}
	}
	res.Appended, res.Checkpoint = len(leaves), cp
	return res, nil
}

// write writes the leaves after the latest checkpoint and signs the new
// one; it changes nothing of l.
func (l *Log) write(ctx context.Context, leaves [][]byte) (*Checkpoint, error) {
	oldN := l.latest.Size
	newN := oldN + int64(len(leaves))
	overlay := map[int64]tlog.Hash{}
	hr := overlayReader{new: overlay, old: tlog.TileHashReader(l.latest.Tree(), &tileReader{blobs: l.blobs, ctx: ctx})}
	for i, leaf := range leaves {
		n := oldN + int64(i)
		hs, err := tlog.StoredHashes(n, leaf, hr)
		if err != nil {
			return nil, fmt.Errorf("evidence: append: hashes of leaf %d: %w", n, err)
		}
		base := tlog.StoredHashIndex(0, n)
		for j, h := range hs {
			overlay[base+int64(j)] = h
		}
	}
	root, err := tlog.TreeHash(newN, hr)
	if err != nil {
		return nil, fmt.Errorf("evidence: append: root: %w", err)
	}
	// The leaves of the data tiles: the last partial tile's, then these.
	first := oldN - int64(len(l.partial))
	all := append(append([][]byte(nil), l.partial...), leaves...)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(l.opts.Parallel)
	for _, t := range tlog.NewTiles(TileHeight, oldN, newN) {
		data, err := tlog.ReadTileData(t, hr)
		if err != nil {
			return nil, fmt.Errorf("evidence: append: tile %s: %w", t.Path(), err)
		}
		g.Go(func() error { return l.blobs.Put(gctx, t.Path(), data) })
		if t.L == 0 {
			dt := t
			dt.L = -1
			start := t.N<<TileHeight - first
			body := encodeDataTile(all[start : start+int64(t.W)])
			g.Go(func() error { return l.blobs.Put(gctx, dt.Path(), body) })
		}
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("evidence: append: write tiles: %w", err)
	}
	cp, err := signCheckpoint(l.signer, newN, root)
	if err != nil {
		return nil, err
	}
	if err := l.blobs.Put(ctx, historyKey(newN), cp.Signed); err != nil {
		return nil, fmt.Errorf("evidence: append: write checkpoint: %w", err)
	}
	if err := l.blobs.Put(ctx, latestKey, cp.Signed); err != nil {
		return nil, fmt.Errorf("evidence: append: write latest checkpoint: %w", err)
	}
	return cp, nil
}

// overlayReader reads the hashes of a batch being appended from new and
// the log's stored hashes from old.
type overlayReader struct {
	new map[int64]tlog.Hash
	old tlog.HashReader
}

func (r overlayReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	for i, x := range indexes {
		if h, ok := r.new[x]; ok {
			out[i] = h
		} else {
			missing = append(missing, x)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	old, err := r.old.ReadHashes(missing)
	if err != nil {
		return nil, err
	}
	for i, x := range indexes {
		if _, ok := r.new[x]; !ok {
			out[i], old = old[0], old[1:]
		}
	}
	return out, nil
}

// tileReader reads hash tiles from blobs for tlog.TileHashReader, which
// checks them against the tree it reads for.
type tileReader struct {
	blobs blob.Store
	ctx   context.Context
}

func (r *tileReader) Height() int { return TileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := getBlob(r.ctx, r.blobs, t.Path())
		if err != nil {
			return nil, err
		}
		if len(b) != t.W*tlog.HashSize {
			return nil, fmt.Errorf("tile %s is %d bytes, want %d", t.Path(), len(b), t.W*tlog.HashSize)
		}
		out[i] = b
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// dataTile is the data tile holding leaf start of a tree of size n.
func dataTile(start, n int64) tlog.Tile {
	t := tlog.TileForIndex(TileHeight, tlog.StoredHashIndex(0, start))
	t.W = int(min(n-t.N<<TileHeight, 1<<TileHeight))
	t.L = -1
	return t
}

// encodeDataTile is a data tile's bytes: each leaf and a newline.
func encodeDataTile(leaves [][]byte) []byte {
	var buf bytes.Buffer
	for _, b := range leaves {
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// readDataTile reads a data tile and splits it into its t.W leaves.
func readDataTile(ctx context.Context, blobs blob.Store, t tlog.Tile) ([][]byte, error) {
	b, err := getBlob(ctx, blobs, t.Path())
	if err != nil {
		return nil, fmt.Errorf("evidence: data tile: %w", err)
	}
	leaves, err := splitDataTile(b)
	if err != nil {
		return nil, fmt.Errorf("evidence: data tile %s: %w", t.Path(), err)
	}
	if len(leaves) != t.W {
		return nil, fmt.Errorf("evidence: data tile %s holds %d leaves, want %d", t.Path(), len(leaves), t.W)
	}
	return leaves, nil
}

// splitDataTile splits a data tile's bytes into its leaves.
func splitDataTile(b []byte) ([][]byte, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errors.New("does not end in a newline")
	}
	leaves := bytes.Split(b[:len(b)-1], []byte("\n"))
	for i, leaf := range leaves {
		if len(leaf) == 0 {
			return nil, fmt.Errorf("leaf %d is empty", i)
		}
	}
	return leaves, nil
}
