package storagestats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// ErrNotHandedOn is wrapped (permanent) by the refusal of a continuation
// whose counts so far no hand-on of this processor saved.
var ErrNotHandedOn = errors.New("storagestats: refused: a count continues only from a hand-on Mill saved " +
	"(the marker, items, bytes and start so far)")

// handOff is what a hand-on saves: the counts so far the continuation task
// must carry.
type handOff struct {
	V       int    `json:"v"`
	Marker  string `json:"marker"`
	Items   int64  `json:"items"`
	Bytes   int64  `json:"bytes"`
	Started int64  `json:"started"` // epoch milliseconds, as on the wire
}

func handOffOf(s task.StorageStats) handOff {
	return handOff{V: 1, Marker: s.Marker, Items: s.Items, Bytes: s.Bytes, Started: s.Started.UnixMilli()}
}

// handOffKey names the hand-off of a continuation: the count (run,
// account, store, space) and where it resumes.
func handOffKey(s task.StorageStats) string {
	return storage.CheckpointKey("stats", s.Account, s.StoreID, s.SpaceID, s.RunID, s.Marker)
}

// continues reports whether s carries counts so far (a continuation).
func continues(s task.StorageStats) bool {
	return s.Marker != "" || s.Items != 0 || s.Bytes != 0 || !s.Started.IsZero()
}

// saveHandOff records the counts so far of s before it is sent on.
func (p *Processor) saveHandOff(ctx context.Context, s task.StorageStats) error {
	if p.cfg.Checkpoints == nil {
		return nil
	}
	b, err := json.Marshal(handOffOf(s))
	if err != nil {
		return err
	}
	if err := p.cfg.Checkpoints.Put(ctx, handOffKey(s), b); err != nil {
		return fmt.Errorf("storagestats: save the hand-on: %w", err)
	}
	return nil
}

// checkHandOff requires the counts so far of a continuation to be the ones
// a hand-on saved (see the package doc).
func (p *Processor) checkHandOff(ctx context.Context, s task.StorageStats) error {
	if p.cfg.Checkpoints == nil || !continues(s) {
		return nil
	}
	b, err := p.cfg.Checkpoints.Get(ctx, handOffKey(s))
	refuse := func(why string) error {
		return processors.Permanent(fmt.Errorf("%w: %s/%s/%s of run %s at marker %s (%d items, %d bytes): %s", ErrNotHandedOn,
			s.Account, s.StoreID, s.SpaceID, storage.QuoteID(s.RunID), storage.QuoteID(s.Marker), s.Items, s.Bytes, why))
	}
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return refuse("no hand-on saved them")
	case err != nil:
		return fmt.Errorf("storagestats: load the hand-on: %w", err)
	}
	var saved handOff
	if json.Unmarshal(b, &saved) != nil || saved != handOffOf(s) {
		return refuse("the hand-on saved other counts")
	}
	return nil
}
