package devmode

import (
	"context"
	"fmt"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
	bitproducer "github.com/millfleet/mill/producers/bit"
	statsproducer "github.com/millfleet/mill/producers/stats"
)

// storageStats runs the storage statistics producer once, lets Workman's
// STORAGE_STATS processor count every space, and compares each recorded
// count with a direct listing of the space (docs/ARCHITECTURE.md, Storage
// statistics): a difference is a problem of the run.
func (e *env) storageStats(ctx context.Context) error {
	prod, err := statsproducer.New(statsproducer.Config{Source: bitproducer.Source{Registry: e.reg, Opener: e.deps.Stores, Logger: e.cfg.Logger}, Known: e.deps.Stats})
	if err != nil {
		return err
	}
	sum, err := e.runLoop(ctx, statsproducer.Kind, prod, e.deps.Queues[queue.KeyBit])
	if err != nil {
		return err
	}
	e.printf("storage statistics: stats producer %s", sum.String())
	if err := e.waitIdle(ctx, "storage statistics"); err != nil {
		return err
	}
	rows, err := e.deps.Stats.Latest(ctx, spacestats.Filter{})
	if err != nil {
		return err
	}
	if len(rows) != sum.MorselsTotal {
		e.r.Problems = append(e.r.Problems, fmt.Sprintf("storage statistics: %d spaces recorded, the stats producer queued %d", len(rows), sum.MorselsTotal))
	}
	for _, r := range rows {
		p, err := e.deps.Stores.Open(ctx, r.Account, r.StoreID)
		if err != nil {
			return err
		}
		var items, bytes int64
		for en, err := range storage.WalkEntries(ctx, p, r.SpaceID, "", 0) {
			if err != nil {
				return fmt.Errorf("list %s/%s/%s: %w", r.Account, r.StoreID, r.SpaceID, err)
			}
			items++
			bytes += en.Size
		}
		if items != r.Items || bytes != r.Bytes {
			e.r.Problems = append(e.r.Problems, fmt.Sprintf("storage statistics of %s/%s/%s: recorded %d items, %d bytes; a listing finds %d, %d",
				r.Account, r.StoreID, r.SpaceID, r.Items, r.Bytes, items, bytes))
		}
	}
	e.r.Stats = spacestats.Groups(rows, spacestats.ByStore)
	e.r.StatsSpaces = len(rows)
	return nil
}
