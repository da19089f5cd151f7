package bit

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// Cold copies restored, then read (docs/ARCHITECTURE.md, Cold storage). In
// a store whose archived method is restore, an item of the run's sample
// that the listing shows in an archival class (GLACIER, DEEP_ARCHIVE) and
// that cannot be read now gets a restore request (storage.Restorer: S3
// RestoreObject, Restore.Days and Restore.Tier) instead of a BIT task, and
// is not counted in the run's record: its bytes cannot be read in this
// run, so its report neither waits for it nor counts it, and its copy
// stays due until a later run — one that finds it restored — reads and
// hashes it with an ordinary BIT (method read). An item already restored
// gets that BIT at once. The restore state comes from the listing when the
// provider reports it (S3 does, with the RestoreStatus attribute), else
// from a restore request that answers "already asked" followed by a Head.

// Restore configures the restore route of archived items.
type Restore struct {
	// Days the restored copy is kept (RestoreObject's Days): long enough
	// for a later run to read it — more than the time between runs plus
	// the restore's hours, or the copy expires unread and the next run
	// asks again (cmd/bitproducer warns). At least 1.
	Days int
	// Tier of the restores (storage.RestoreBulk, the cheapest, when "").
	Tier storage.RestoreTier
	// Method returns a store's archived method; nil: its fixity target's
	// (stores.Store.FixityTarget).
	Method func(st *stores.Store) stores.ArchivedMethod
}

// DefaultRestoreDays is how long a restored copy is kept by default.
const DefaultRestoreDays = 7

func (r *Restore) validate() error {
	p := validate.Struct("bit producer: Restore", r)
	p.Check(r.Days >= 1, "Days", r.Days, "be at least 1")
	if err := p.Err(); err != nil {
		return err
	}
	_, err := storage.ParseRestoreTier(string(r.Tier))
	return err
}

// restoreTally counts what the restore route did with a space's archived
// items in a run.
type restoreTally struct {
	// Requested: restores this run started; Pending: restores asked for
	// before and not done yet; Failed: requests that failed (the copies
	// stay due); Bytes: the size of the items of the three.
	Requested int64 `json:"requested,omitempty"`
	Pending   int64 `json:"pending,omitempty"`
	Failed    int64 `json:"failed,omitempty"`
	Bytes     int64 `json:"bytes,omitempty"`
}

// restoreRoute returns the lister and restorer of a store whose archived
// method is restore, or nils: no restore route configured, another
// method, or a provider that cannot list storage classes or restore.
func (p *Producer) restoreRoute(account, storeID string, prov storage.Provider) (storage.EntryLister, storage.Restorer) {
	r := p.cfg.Restore
	if r == nil {
		return nil, nil
	}
	st, err := p.cfg.Registry.Store(account, storeID)
	if err != nil {
		return nil, nil
	}
	method := st.FixityTarget().ArchivedMethod
	if r.Method != nil {
		method = r.Method(st)
	}
	if method != stores.ArchivedRestore {
		return nil, nil
	}
	u := storage.Unwrap(prov)
	el, ok1 := u.(storage.EntryLister)
	rs, ok2 := u.(storage.Restorer)
	if !ok1 || !ok2 {
		return nil, nil
	}
	return el, rs
}

// holdArchived asks for the restores of the sampled archived items of a
// bite that cannot be read now, and returns them: they get no BIT task in
// this run. An archived item that is readable (restored) is not held, nor
// one that is gone or no longer archived (its BIT finds out). A request
// that fails is logged and counted, and its item held: the copy stays due,
// and coverage shows it. d.Restores adds up the space's figures.
func (p *Producer) holdArchived(ctx context.Context, d *morselData, prov storage.Provider, r storage.Restorer,
	es []storage.Entry, sampled func(string) bool) (map[string]bool, error) {
	if r == nil {
		return nil, nil
	}
	cfg := p.cfg.Restore
	held := map[string]bool{}
	var t restoreTally
	for _, e := range es {
		if !ArchivedClass(e.StorageClass) || !sampled(e.ID) || e.Restore == storage.RestoreRestored {
			continue
		}
		if e.Restore == storage.RestoreOngoing {
			held[e.ID] = true
			t.Pending++
			t.Bytes += e.Size
			continue
		}
		started, err := r.RequestRestore(ctx, d.SpaceID, e.ID, cfg.Days, cfg.Tier)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if started {
			held[e.ID] = true
			t.Requested++
			t.Bytes += e.Size
			continue
		}
		// Asked for before, done, or refused: Head tells which.
		info, herr := prov.Head(ctx, d.SpaceID, e.ID)
		switch {
		case errors.Is(herr, storage.ErrNotFound):
			continue // gone since the listing: its BIT records that
		case herr == nil && info.Readable():
			continue // restored (or no longer archived): read it now
		case err == nil && herr == nil: // a restore in progress
			held[e.ID] = true
			t.Pending++
			t.Bytes += e.Size
			continue
		}
		held[e.ID] = true
		t.Failed++
		t.Bytes += e.Size
		p.log.Warn("restore request failed; the copy stays due", "account", d.Account, "store_id", d.StoreID,
			"space_id", d.SpaceID, "content_id", e.ID, "storage_class", e.StorageClass,
			"error", fmt.Sprint(errors.Join(err, herr)))
	}
	if t == (restoreTally{}) {
		return held, nil
	}
	if d.Restores == nil {
		d.Restores = &restoreTally{}
	}
	d.Restores.Requested += t.Requested
	d.Restores.Pending += t.Pending
	d.Restores.Failed += t.Failed
	d.Restores.Bytes += t.Bytes
	p.log.Info("archived copies held for a restore", "account", d.Account, "store_id", d.StoreID, "space_id", d.SpaceID,
		"restores_requested", t.Requested, "restores_pending", t.Pending, "restores_failed", t.Failed, "bytes", t.Bytes,
		"days", cfg.Days, "tier", string(tierOrBulk(cfg.Tier)))
	return held, nil
}

// logRestores logs a space's restore figures once its listing is done.
func (p *Producer) logRestores(d morselData, runID string) {
	if d.Restores == nil {
		return
	}
	p.log.Info("restores of the space's archived copies this run; they are checked by a later run once restored",
		"run_id", runID, "account", d.Account, "store_id", d.StoreID, "space_id", d.SpaceID,
		"restores_requested", d.Restores.Requested, "restores_pending", d.Restores.Pending,
		"restores_failed", d.Restores.Failed, "bytes", d.Restores.Bytes)
}

// tierOrBulk is t, or RestoreBulk when t is "".
func tierOrBulk(t storage.RestoreTier) storage.RestoreTier {
	if t == "" {
		return storage.RestoreBulk
	}
	return t
}
