// Package dup is the looping duplication producer, built on
// producers/looping (docs/ARCHITECTURE.md, Duplication and Looping
// producers).
//
// A run has one morsel per (account, space, store policy): for every
// account of duplication-accounts.json that is active in the store
// registry, the spaces of each store policy's source store, each with the
// policies policy.StorePolicies gives it (defaultPolicies included; ignored
// spaces and "x-" system spaces have none). Morsels are ordered by account
// (file order), space, then the space's policy order, so the two policies
// of one space are nibbled one after the other, as DuraCloud's producer
// does.
//
// Each morsel starts with its delete step (Deletes): one space-level DUP
// task (so the destination space is created, with its ACLs), then one DUP
// task per destination item absent from the source, found by merging the
// two sorted listings (storage.MergeSorted) in constant memory. Then bites
// (Bite) queue one DUP task per source item, up to the bite size (1000)
// each; the dup processor decides what each needs. The looping framework
// interleaves the morsels, checks the queue size before each step and
// sends the tasks in batches of 10.
package dup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// Kind is the producer's kind: its lease name and state kind.
const Kind = "dupproducer"

// Opener opens the storage provider of an account's store;
// *stores.Opener implements it. The producer only reads.
type Opener interface {
	Open(ctx context.Context, account, storeID string) (storage.Provider, error)
}

// Config configures a Producer. Registry, Policies and Opener are required.
type Config struct {
	// Registry says which accounts are active.
	Registry *stores.Registry
	// Policies holds duplication-accounts.json and the account policies.
	Policies policy.Repository
	// Opener opens the source and destination stores.
	Opener Opener
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Producer is the duplication producer: a looping.Producer and
// looping.Deleter.
type Producer struct {
	cfg Config
	log *slog.Logger
}

var (
	_ looping.Producer = (*Producer)(nil)
	_ looping.Deleter  = (*Producer)(nil)
)

// New returns a Producer.
func New(cfg Config) (*Producer, error) {
	var errs []error
	if cfg.Registry == nil {
		errs = append(errs, errors.New("no Registry"))
	}
	if cfg.Policies == nil {
		errs = append(errs, errors.New("no Policies"))
	}
	if cfg.Opener == nil {
		errs = append(errs, errors.New("no Opener"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dup producer: config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Producer{cfg: cfg, log: cfg.Logger.With("producer", Kind)}, nil
}

// Target is what a morsel duplicates (its Data).
type Target struct {
	Account     string `json:"account"`
	SpaceID     string `json:"space"`
	StoreID     string `json:"src"`
	DestStoreID string `json:"dest"`
}

// MorselID names the morsel of t: "account/space/src→dest".
func (t Target) MorselID() string {
	return t.Account + "/" + t.SpaceID + "/" + policy.StorePolicy{SrcStoreID: t.StoreID, DestStoreID: t.DestStoreID}.String()
}

func (t Target) task(contentID string) *task.Task {
	return task.Dup{Account: t.Account, StoreID: t.StoreID, DestStoreID: t.DestStoreID, SpaceID: t.SpaceID, ContentID: contentID}.Task()
}

// Morsels implements looping.Producer.
func (p *Producer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	accounts, err := p.cfg.Policies.Accounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", policy.AccountsFile, err)
	}
	var out []looping.Morsel
	for _, account := range accounts {
		a := p.cfg.Registry.Account(account)
		switch {
		case a == nil:
			p.log.Warn("account listed for duplication is not in the registry; skipped", "account", account)
			continue
		case !a.Active():
			p.log.Info("account is inactive; skipped", "account", account)
			continue
		}
		pol, err := p.cfg.Policies.Policy(ctx, account)
		if errors.Is(err, policy.ErrNotFound) {
			p.log.Warn("account has no duplication policy; skipped", "account", account)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", account, err)
		}
		targets, err := p.targets(ctx, account, pol)
		if err != nil {
			return nil, err
		}
		for _, t := range targets {
			data, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			out = append(out, looping.Morsel{ID: t.MorselID(), Data: data})
		}
	}
	return out, nil
}

// targets lists the (space, store policy) pairs of one account.
func (p *Producer) targets(ctx context.Context, account string, pol *policy.Policy) ([]Target, error) {
	// Spaces of every store that is the source of some policy.
	var sources []string
	for _, id := range pol.StoreIDs() {
		if p.isSource(pol, id) {
			sources = append(sources, id)
		}
	}
	spacesOf := map[string]map[string]bool{}
	var all []string
	for _, src := range sources {
		prov, err := p.cfg.Opener.Open(ctx, account, src)
		if err != nil {
			return nil, fmt.Errorf("account %s: open store %s: %w", account, src, err)
		}
		spaces, err := prov.ListSpaces(ctx)
		if err != nil {
			return nil, fmt.Errorf("account %s: list spaces of store %s: %w", account, src, err)
		}
		spacesOf[src] = map[string]bool{}
		for _, s := range spaces {
			spacesOf[src][s] = true
			all = append(all, s)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	var out []Target
	for _, space := range all {
		for _, sp := range pol.StorePolicies(space) {
			if spacesOf[sp.SrcStoreID][space] {
				out = append(out, Target{Account: account, SpaceID: space, StoreID: sp.SrcStoreID, DestStoreID: sp.DestStoreID})
			}
		}
	}
	return out, nil
}

// isSource reports whether store id is the source of any policy of pol.
func (p *Producer) isSource(pol *policy.Policy, id string) bool {
	for _, sp := range pol.Default {
		if sp.SrcStoreID == id {
			return true
		}
	}
	for _, list := range pol.SpacePolicies {
		for _, sp := range list {
			if sp.SrcStoreID == id {
				return true
			}
		}
	}
	return false
}

func target(m looping.Morsel) (Target, error) {
	var t Target
	if err := json.Unmarshal(m.Data, &t); err != nil {
		return t, fmt.Errorf("morsel %s: data: %w", m.ID, err)
	}
	if t.Account == "" || t.SpaceID == "" || t.StoreID == "" || t.DestStoreID == "" {
		return t, fmt.Errorf("morsel %s: data %s lacks account, space or stores", m.ID, m.Data)
	}
	return t, nil
}

func (p *Producer) open(ctx context.Context, t Target) (src, dst storage.Provider, err error) {
	if src, err = p.cfg.Opener.Open(ctx, t.Account, t.StoreID); err != nil {
		return nil, nil, err
	}
	if dst, err = p.cfg.Opener.Open(ctx, t.Account, t.DestStoreID); err != nil {
		return nil, nil, err
	}
	return src, dst, nil
}

// walk lists a space; a space that does not exist lists as empty.
func walk(ctx context.Context, s storage.Provider, space string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for id, err := range storage.Walk(ctx, s, space, "", 0) {
			if errors.Is(err, storage.ErrNotFound) {
				return
			}
			if !yield(id, err) {
				return
			}
		}
	}
}

// Deletes implements looping.Deleter: the morsel's space-level task, then a
// task for every destination item the source lacks.
func (p *Producer) Deletes(ctx context.Context, run looping.RunInfo, m looping.Morsel, emit looping.Emit) (looping.BiteResult, error) {
	t, err := target(m)
	if err != nil {
		return looping.BiteResult{}, err
	}
	src, dst, err := p.open(ctx, t)
	if err != nil {
		return looping.BiteResult{}, err
	}
	if err := emit(ctx, t.task("")); err != nil {
		return looping.BiteResult{}, err
	}
	if _, err := src.SpaceACLs(ctx, t.SpaceID); errors.Is(err, storage.ErrNotFound) {
		// The source space went away since the run started: the
		// space-level task deals with the destination; nothing else to do.
		return looping.BiteResult{Marker: m.Marker, Done: true}, nil
	} else if err != nil {
		return looping.BiteResult{}, err
	}
	n := 0
	for e, err := range storage.MergeSorted(walk(ctx, src, t.SpaceID), walk(ctx, dst, t.SpaceID)) {
		if err != nil {
			return looping.BiteResult{}, fmt.Errorf("compare %s: %w", m.ID, err)
		}
		if e.InB && !e.InA {
			if err := emit(ctx, t.task(e.ID)); err != nil {
				return looping.BiteResult{}, err
			}
			n++
		}
	}
	if n > 0 {
		p.log.Info("destination items absent from the source queued for deletion", "morsel", m.ID, "count", n)
	}
	return looping.BiteResult{Marker: m.Marker}, nil
}

// Bite implements looping.Producer: one DUP task per source item after the
// marker, at most max.
func (p *Producer) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	t, err := target(m)
	if err != nil {
		return looping.BiteResult{}, err
	}
	src, err := p.cfg.Opener.Open(ctx, t.Account, t.StoreID)
	if err != nil {
		return looping.BiteResult{}, err
	}
	ids, more, err := src.ListContent(ctx, t.SpaceID, m.Marker, max)
	if errors.Is(err, storage.ErrNotFound) {
		return looping.BiteResult{Marker: m.Marker, Done: true}, nil
	}
	if err != nil {
		return looping.BiteResult{}, fmt.Errorf("list %s after %q: %w", m.ID, m.Marker, err)
	}
	for _, id := range ids {
		if err := emit(ctx, t.task(id)); err != nil {
			return looping.BiteResult{}, err
		}
	}
	marker := m.Marker
	if len(ids) > 0 {
		marker = ids[len(ids)-1]
	}
	return looping.BiteResult{Marker: marker, Done: !more || len(ids) == 0}, nil
}
