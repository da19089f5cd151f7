package devmode

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/runs"
	"math/rand/v2"
	"os"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	bitproducer "github.com/millfleet/mill/producers/bit"
	dupproducer "github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

// The dev mode's phases after setup: seed, duplicate, inject faults, bit
// check, re-sweep (env.run calls them in order; verify.go checks the
// outcome).

func (e *env) seed(ctx context.Context) error {
	sd, err := Seed(ctx, SeedConfig{Registry: e.reg, Open: e.deps.Stores.Open, Audit: e.deps.Queues[queue.KeyAudit],
		Items: e.cfg.Items, Seed: e.cfg.Seed})
	if err != nil {
		return err
	}
	e.seeded = sd.IDs
	e.r.Spaces, e.r.Items, e.r.Bytes = sd.Spaces, sd.Items, sd.Bytes
	e.printf("seed: %d accounts, %d stores, %d spaces, %d items (%.1f KiB) written through the audited providers",
		e.r.Accounts, e.r.Stores, e.r.Spaces, e.r.Items, float64(e.r.Bytes)/1024)
	return e.waitIdle(ctx, "seed")
}

func (e *env) runDupProducer(ctx context.Context) (looping.Summary, error) {
	prod, err := dupproducer.New(dupproducer.Config{Registry: e.reg, Policies: e.pols, Opener: e.deps.Stores, Logger: e.cfg.Logger})
	if err != nil {
		return looping.Summary{}, err
	}
	return e.runLoop(ctx, dupproducer.Kind, prod, e.deps.Queues[queue.KeyDupLow])
}

// runLoop runs a looping producer once, as the dev mode runs them all: its
// state and lease in memory, progress off, notices to the run's notes.
func (e *env) runLoop(ctx context.Context, kind string, p looping.Producer, q queue.Queue) (looping.Summary, error) {
	cfg := looping.Config{
		Kind: kind, Producer: p, Queue: q,
		State: looping.NewMemoryStore(), Lease: memlease.New(nil), Notifier: e.notes,
		Logger: e.cfg.Logger, Progress: looping.ProgressOff,
	}
	if e.deps.Runs != nil {
		cfg.Runs = &runs.Recorder{Store: e.deps.Runs, Reports: e.deps.Reports, Notifier: e.notes, Logger: e.cfg.Logger}
	}
	loop, err := looping.New(cfg)
	if err != nil {
		return looping.Summary{}, err
	}
	return loop.Run(ctx)
}

func (e *env) duplicate(ctx context.Context) error {
	sum, err := e.runDupProducer(ctx)
	if err != nil {
		return err
	}
	e.printf("duplicate: %s", sum.String())
	if err := e.waitIdle(ctx, "duplicate"); err != nil {
		return err
	}
	rep, err := CheckReplicas(ctx, e.reg, e.pols, e.deps.Stores.Open)
	if err != nil {
		return err
	}
	e.r.Duplicated, e.r.Policies = rep.Matching, rep.Policies
	e.r.Problems = append(e.r.Problems, rep.Problems...)
	e.printf("duplicate: %d items on the destinations of %d store policies match their sources", rep.Matching, rep.Policies)
	return nil
}

// pick returns a deterministic content ID of account/space.
func (e *env) pick(account, space string, salt uint64) string {
	ids := e.seeded[account+"/"+space]
	rng := rand.New(rand.NewPCG(e.cfg.Seed, salt))
	return ids[rng.IntN(len(ids))]
}

func (e *env) inject(ctx context.Context) error {
	sour := &Fault{Kind: "sour replica", WantCase: 2, Fix: "BIT_ERROR repairs it from a healthy store",
		Item: Item{"acme", "3", "photos", e.pick("acme", "photos", 1)}}
	gone := &Fault{Kind: "deleted replica", WantCase: 8, Fix: "marked by the first run's report, reported by the second's; BIT_ERROR restores it from its source",
		Item: Item{"globex", "2", "media", e.pick("globex", "media", 2)}}
	stale := &Fault{Kind: "stale index entry", WantCase: 5, Fix: "the bit check sets the index checksum from storage",
		Item: Item{"acme", "1", "docs", e.pick("acme", "docs", 3)}}
	noAudit := &Fault{Kind: "missing audit entry", WantCase: 7, Fix: "the bit check re-syncs the audit log with an AUDIT task",
		Item: Item{"globex", "1", "reports", e.pick("globex", "reports", 4)}}
	e.r.Faults = []*Fault{sour, gone, stale, noAudit}

	if err := e.flipByte(ctx, sour.Item); err != nil {
		return fmt.Errorf("%s: %w", sour.Kind, err)
	}
	p, err := e.deps.Stores.Open(ctx, gone.Item.Account, gone.Item.Store)
	if err != nil {
		return err
	}
	// The plain provider: the deletion is not audited, as if someone
	// removed the file behind the mill's back.
	if err := p.Delete(ctx, gone.Item.Space, gone.Item.Content); err != nil {
		return fmt.Errorf("%s: %w", gone.Kind, err)
	}
	ci := contentindex.Item{Account: stale.Item.Account, StoreID: stale.Item.Store, SpaceID: stale.Item.Space, ContentID: stale.Item.Content}
	wrong := md5.Sum([]byte("stale"))
	if err := e.deps.Index.SetChecksum(ctx, ci, hex.EncodeToString(wrong[:])); err != nil {
		return fmt.Errorf("%s: %w", stale.Kind, err)
	}
	i := noAudit.Item
	latest, err := e.deps.AuditLog.Latest(ctx, i.Account, i.Store, i.Space, i.Content)
	if err != nil {
		return fmt.Errorf("%s: %w", noAudit.Kind, err)
	}
	if err := e.deps.AuditLog.Delete(ctx, latest.Key()); err != nil {
		return fmt.Errorf("%s: %w", noAudit.Kind, err)
	}
	if _, err := e.deps.AuditLog.Latest(ctx, i.Account, i.Store, i.Space, i.Content); !errors.Is(err, auditlog.ErrNotFound) {
		return fmt.Errorf("%s: the item still has an older audit entry (%v); pick another", noAudit.Kind, err)
	}
	for _, f := range e.r.Faults {
		e.printf("inject: %-19s %s (expect case %d)", f.Kind, f.Item, f.WantCase)
	}
	return nil
}

// flipByte inverts one byte of the item's blob in an fs store in place,
// leaving its sidecar (and so its recorded checksum) and its modification
// time alone, as bit rot does.
func (e *env) flipByte(ctx context.Context, i Item) error {
	p, err := e.deps.Stores.Open(ctx, i.Account, i.Store)
	if err != nil {
		return err
	}
	fss, ok := storage.Unwrap(p).(*fsstore.Store)
	if !ok {
		return fmt.Errorf("store %s of %s is not an fs store", i.Store, i.Account)
	}
	path, err := fss.BlobPath(i.Space, i.Content)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	// Bit rot leaves the file's modification time: only reading the
	// bytes finds it (a blob the store sees rewritten is a replaced one).
	return os.Chtimes(path, fi.ModTime(), fi.ModTime())
}

func (e *env) bitCheck(ctx context.Context) error {
	if n := len(e.r.BitRunIDs); n > 0 {
		// A run ID is the run's start to the second: wait for the next
		// second so the second run is a run of its own.
		prev, err := time.Parse("20060102T150405Z", e.r.BitRunIDs[n-1])
		if err != nil {
			return err
		}
		select {
		case <-time.After(time.Until(prev.Add(time.Second))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	prod, err := bitproducer.New(bitproducer.Config{Source: bitproducer.Source{Registry: e.reg, Opener: e.deps.Stores, Logger: e.cfg.Logger}, BitLog: e.deps.BitLog})
	if err != nil {
		return err
	}
	sum, err := e.runLoop(ctx, bitproducer.Kind, prod,
		&bitproducer.Router{Bit: e.deps.Queues[queue.KeyBit], Report: e.deps.Queues[queue.KeyBitReport]})
	if err != nil {
		return err
	}
	e.r.BitRunIDs = append(e.r.BitRunIDs, sum.RunID)
	e.bitSpaces += sum.MorselsTotal
	e.printf("bit check: %s", sum.String())
	return e.waitIdle(ctx, "bit check")
}

func (e *env) resweep(ctx context.Context) error {
	sum, err := e.runDupProducer(ctx)
	if err != nil {
		return err
	}
	e.printf("re-sweep: %s", sum.String())
	return e.waitIdle(ctx, "re-sweep")
}
