package evidence

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ProofFormat names the proof file format.
const ProofFormat = "mill-evidence-proof/v1"

// Proof is an event's inclusion proof, self-contained: the event's
// canonical bytes, its leaf index, the signed checkpoint and the hashes
// that lead from the leaf to the checkpoint's root. Marshal it with
// encoding/json for a third party; CheckProof checks it.
type Proof struct {
	Format     string   `json:"format"`
	Index      int64    `json:"index"`
	Event      string   `json:"event"`      // the canonical bytes
	Checkpoint string   `json:"checkpoint"` // the signed checkpoint note
	Hashes     []string `json:"hashes"`     // base64, tlog.RecordProof
}

// ErrNoEvent is Prove's error for an ID the log does not hold.
var ErrNoEvent = errors.New("evidence: no such event in the log")

// Prove finds the event with the ID in the log (up to its latest
// checkpoint, which it checks with v) and returns its inclusion proof.
// It reads the log (Events) until it finds the event.
func Prove(ctx context.Context, blobs blob.Store, v note.Verifier, id string) (*Proof, error) {
	var found *Event
	var at int64
	cp, err := Events(ctx, blobs, v, func(x int64, e *Event) error {
		if e.ID != id {
			return nil
		}
		found, at = e, x
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %s (checkpoint size %d)", ErrNoEvent, id, cp.Size)
	}
	leaf, err := found.Canonical()
	if err != nil {
		return nil, err
	}
	return proveLeaf(ctx, blobs, cp, at, leaf)
}

// proveLeaf makes the proof of leaf x of the checkpoint's tree.
func proveLeaf(ctx context.Context, blobs blob.Store, cp *Checkpoint, x int64, leaf []byte) (*Proof, error) {
	hr := tlog.TileHashReader(cp.Tree(), &tileReader{blobs: blobs, ctx: ctx})
	rp, err := tlog.ProveRecord(cp.Size, x, hr)
	if err != nil {
		return nil, fmt.Errorf("evidence: proof of leaf %d: %w", x, err)
	}
	if err := tlog.CheckRecord(rp, cp.Size, cp.Root, x, tlog.RecordHash(leaf)); err != nil {
		return nil, fmt.Errorf("evidence: leaf %d is not the one checkpoint %d signed: %w", x, cp.Size, err)
	}
	p := &Proof{Format: ProofFormat, Index: x, Event: string(leaf), Checkpoint: string(cp.Signed)}
	for _, h := range rp {
		p.Hashes = append(p.Hashes, base64.StdEncoding.EncodeToString(h[:]))
	}
	return p, nil
}

// maxProof bounds a proof file: an event, a checkpoint and 64 hashes.
const maxProof = 64 << 10

// CheckProof checks a proof file with only the log's verifier key: the
// checkpoint's signature and origin, the event's canonical encoding, and
// that the event is the leaf at the index of the signed tree. It returns
// the event and the checkpoint.
func CheckProof(file []byte, v note.Verifier) (*Event, *Checkpoint, error) {
	if len(file) > maxProof {
		return nil, nil, fmt.Errorf("evidence: proof of %d bytes, more than %d", len(file), maxProof)
	}
	dec := json.NewDecoder(bytes.NewReader(file))
	dec.DisallowUnknownFields()
	var p Proof
	if err := dec.Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("evidence: proof: %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("evidence: proof: data after the proof")
	}
	if p.Format != ProofFormat {
		return nil, nil, fmt.Errorf("evidence: proof format %q, want %q", p.Format, ProofFormat)
	}
	cp, err := OpenCheckpoint([]byte(p.Checkpoint), v)
	if err != nil {
		return nil, nil, fmt.Errorf("evidence: proof: checkpoint: %w", err)
	}
	e, err := ParseCanonical([]byte(p.Event))
	if err != nil {
		return nil, nil, fmt.Errorf("evidence: proof: %w", err)
	}
	if p.Index < 0 || p.Index >= cp.Size {
		return nil, nil, fmt.Errorf("evidence: proof: index %d outside the tree of size %d", p.Index, cp.Size)
	}
	if len(p.Hashes) > 64 {
		return nil, nil, fmt.Errorf("evidence: proof: %d hashes", len(p.Hashes))
	}
	rp := make(tlog.RecordProof, len(p.Hashes))
	for i, s := range p.Hashes {
		b, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return nil, nil, fmt.Errorf("evidence: proof: hash %d is not %d bytes of base64", i, tlog.HashSize)
		}
		copy(rp[i][:], b)
	}
	if err := tlog.CheckRecord(rp, cp.Size, cp.Root, p.Index, tlog.RecordHash([]byte(p.Event))); err != nil {
		return nil, nil, fmt.Errorf("evidence: proof: event %s is not leaf %d of the signed tree of size %d: %w", e.ID, p.Index, cp.Size, err)
	}
	return e, cp, nil
}
