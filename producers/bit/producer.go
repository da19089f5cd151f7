package bit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// Kind is the producer's kind: its lease name and state kind.
const Kind = "bitproducer"

// Opener opens a registered store (*stores.Opener implements it).
type Opener interface {
	Open(ctx context.Context, account, storeID string) (storage.Provider, error)
}

// Config configures a Producer. Registry and Opener are required.
type Config struct {
	// Registry lists the accounts and their stores; inactive accounts are
	// skipped.
	Registry *stores.Registry
	// Opener opens the stores to list their spaces and content.
	Opener Opener
	// Filter selects the spaces (default: every space).
	Filter Filter
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Producer is the bit-integrity looping producer: one morsel
// per (account, store, space) of the active accounts that the filter
// selects; each bite queues a BIT task (carrying the run ID) for each of
// the next items of the space's listing, and the bite that finishes the
// listing also queues one BIT_REPORT carrying the run ID and the number of
// items listed (the report processor waits until that many items have a
// result). Run it with looping.Loop, whose queue must route BIT_REPORT
// tasks to the bit-report queue: see Router.
type Producer struct {
	cfg Config
	log *slog.Logger
}

var _ looping.Producer = (*Producer)(nil)

// New returns a producer.
func New(cfg Config) (*Producer, error) {
	var errs []error
	if cfg.Registry == nil {
		errs = append(errs, errors.New("no Registry"))
	}
	if cfg.Opener == nil {
		errs = append(errs, errors.New("no Opener"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bit: config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Producer{cfg: cfg, log: cfg.Logger}, nil
}

// morselData is the Data of a morsel.
type morselData struct {
	Account string `json:"account"`
	StoreID string `json:"store"`
	SpaceID string `json:"space"`
	// Listed counts the items queued by the morsel's earlier bites.
	Listed int64 `json:"listed"`
}

// MorselID names the morsel of a space: "account/store/space".
func MorselID(account, storeID, spaceID string) string {
	return account + "/" + storeID + "/" + spaceID
}

// Morsels lists the spaces to check: accounts in registry order, stores in
// account order, spaces in each store's (byte-wise) order. A store that
// cannot be opened or listed fails the run's start: the next invocation
// tries again rather than silently checking less.
func (p *Producer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	var out []looping.Morsel
	var errs []error
	for _, a := range p.cfg.Registry.ActiveAccounts() {
		for _, s := range a.Stores {
			if !p.cfg.Filter.Store(a.ID, s.ID) {
				continue
			}
			prov, err := p.cfg.Opener.Open(ctx, a.ID, s.ID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			spaces, err := prov.ListSpaces(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("list spaces of store %q of account %q: %w", s.ID, a.ID, err))
				continue
			}
			for _, sp := range spaces {
				if !p.cfg.Filter.Space(a.ID, s.ID, sp) {
					continue
				}
				data, err := json.Marshal(morselData{Account: a.ID, StoreID: s.ID, SpaceID: sp})
				if err != nil {
					return nil, err
				}
				out = append(out, looping.Morsel{ID: MorselID(a.ID, s.ID, sp), Data: data})
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Bite queues BIT tasks for up to max items after m.Marker, and the
// space's BIT_REPORT when the listing ends.
func (p *Producer) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	var d morselData
	if err := json.Unmarshal(m.Data, &d); err != nil || d.Account == "" || d.StoreID == "" || d.SpaceID == "" {
		return looping.BiteResult{}, fmt.Errorf("bit: morsel %q: bad data %s", m.ID, m.Data)
	}
	prov, err := p.cfg.Opener.Open(ctx, d.Account, d.StoreID)
	if err != nil {
		return looping.BiteResult{}, err
	}
	ids, more, err := prov.ListContent(ctx, d.SpaceID, m.Marker, max)
	if errors.Is(err, storage.ErrNotFound) {
		// The space was deleted since the run started: nothing left to
		// check, and nothing to report on.
		p.log.Warn("space vanished during the run; no report for it", "account", d.Account,
			"store_id", d.StoreID, "space_id", d.SpaceID, "listed", d.Listed)
		return looping.BiteResult{Marker: m.Marker, Done: true}, nil
	}
	if err != nil {
		return looping.BiteResult{}, err
	}
	if more && len(ids) == 0 {
		return looping.BiteResult{}, fmt.Errorf("bit: store %q of account %q: listing of %q after %q said more but returned nothing",
			d.StoreID, d.Account, d.SpaceID, m.Marker)
	}
	tasks := make([]*task.Task, 0, len(ids)+1)
	for _, id := range ids {
		tasks = append(tasks, task.Bit{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID, ContentID: id, RunID: run.ID}.Task())
	}
	d.Listed += int64(len(ids))
	if !more {
		expected := d.Listed
		tasks = append(tasks, task.BitReport{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID, RunID: run.ID, Expected: &expected}.Task())
	}
	// BITs first, the report last: the framework sends in emit order.
	if err := emit(ctx, tasks...); err != nil {
		return looping.BiteResult{}, err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return looping.BiteResult{}, err
	}
	marker := m.Marker
	if len(ids) > 0 {
		marker = ids[len(ids)-1]
	}
	return looping.BiteResult{Marker: marker, Done: !more, Data: data}, nil
}

// Spaces returns the IDs of the morsels' spaces as account/store/space,
// sorted (for logs and tests).
func Spaces(ms []looping.Morsel) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.ID)
	}
	slices.Sort(out)
	return out
}
