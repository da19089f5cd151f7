// Package dup is the looping duplication producer, built on
// producers/looping (docs/ARCHITECTURE.md, Duplication and Looping
// producers).
//
// A run has one morsel per (account, space, store policy): for every
// account of duplication-accounts.json that is active in the store
// registry and has a policy in force (policy.InForce), every space of the
// stores its policy names, with each store policy policy.StorePolicies
// gives the space (defaultPolicies included — also for a space listed with
// an empty list, as in Java; ignored spaces and "x-" system spaces have
// none) whose source or destination holds the space. Spaces that exist only
// at a destination are visited too, so a source space deleted while its
// DELETE_SPACE event was lost is still cleaned up — of what Mill's
// duplication put there only: the dup processor leaves the rest of such a
// space, and the space, alone (processors/dup, Destination-only spaces). Morsels are ordered by
// account (file order), space, then the space's policy order, so the two
// policies of one space are nibbled one after the other, as DuraCloud's
// producer does.
//
// Each morsel starts with its delete step (Deletes), which compares the
// space at both stores and queues space-level DUP tasks (contentId empty,
// as the Java Mill's) where the space needs one. Source space present: one
// space-level task (the destination space is created, with its ACLs), then
// one DUP task per destination item absent from the source, found by
// merging the two sorted listings (storage.MergeSorted) in constant memory.
// Source space gone: one task per destination item, then the space-level
// task, which deletes the destination space once it is empty. The step is
// taken in bites of the bite size, each saved with its marker
// (looping.Morsel.DeletesMarker), so restarting the producer faster than
// it can queue all of a space's deletes never sends the same ones again
// and again. No deletes
// are queued at a destination that is the source of another store policy
// of the space (the dup processor would refuse them). Then bites (Bite)
// queue one DUP task per source item, up to the bite size (1000) each; the
// dup processor decides what each needs. The looping framework interleaves
// the morsels, checks the queue size before each step and sends the tasks
// in batches of 10.
//
// A broken part of the sweep stops only itself: an account whose policy
// cannot be read and a store that cannot be opened or listed (a missing
// credentials profile, a missing bucket, an unsafe fs space) are failed
// morsels of the run, and a space whose steps keep failing is given up by
// the framework (looping.Morsel.Failed); the rest is swept and the next run
// retries them.
package dup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"

	"github.com/millfleet/mill/internal/base/validate"
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
type Opener = storage.Opener

// Config configures a Producer. Registry, Policies and Opener are required.
type Config struct {
	// Registry says which accounts are active.
	Registry *stores.Registry `validate:"required"`
	// Policies holds duplication-accounts.json and the account policies,
	// read through policy.InForce (a *policy.Cache saves re-reading the
	// account list per account).
	Policies policy.Reader `validate:"required"`
	// Opener opens the source and destination stores.
	Opener Opener `validate:"required"`
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
	if err := validate.Struct("dup producer: Config", cfg).Err(); err != nil {
		return nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Producer{cfg: cfg, log: cfg.Logger.With("producer", Kind)}, nil
}

// Target is what a morsel duplicates (its Data).
type Target struct {
	Account     string `json:"account"`
	SpaceID     string `json:"space"`
	StoreID     string `json:"src"`
	DestStoreID string `json:"dest"`
	// NoDeletes: the destination is the source of a store policy of the
	// space, so duplication never deletes there (the dup processor would
	// refuse); the delete step queues nothing.
	NoDeletes bool `json:"noDeletes,omitempty"`
}

// MorselID names the morsel of t: "account/space/src→dest".
func (t Target) MorselID() string {
	return t.Account + "/" + t.SpaceID + "/" + policy.StorePolicy{SrcStoreID: t.StoreID, DestStoreID: t.DestStoreID}.String()
}

func (t Target) task(contentID string) *task.Task {
	return task.Dup{Account: t.Account, StoreID: t.StoreID, DestStoreID: t.DestStoreID, SpaceID: t.SpaceID, ContentID: contentID}.Task()
}

// Morsels implements looping.Producer. A part of the sweep that cannot be
// listed is a failed morsel (looping.Morsel.Failed), so the rest is swept
// and the next run retries it: an account whose policy cannot be read
// ("account/(policy)"), a store that cannot be opened or listed
// ("account/(store ID)"; the store policies from or to it are left out).
// Failing to read the account list, or every account and store failing,
// fails the run's start instead (the next invocation tries again): a sweep
// that lists nothing is not a sweep.
func (p *Producer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	accounts, err := p.cfg.Policies.Accounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", policy.AccountsFile, err)
	}
	var out []looping.Morsel
	var errs []error
	fail := func(id string, err error) {
		errs = append(errs, err)
		out = append(out, looping.Morsel{ID: id, Failed: err.Error()})
	}
	listed := false
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
		pol, err := policy.InForce(ctx, p.cfg.Policies, account)
		if errors.Is(err, policy.ErrNotFound) {
			p.log.Warn("account has no duplication policy in force; skipped", "account", account, "reason", err)
			continue
		}
		if err != nil {
			fail(account+"/(policy)", fmt.Errorf("account %s: %w", account, err))
			continue
		}
		targets, broken := p.targets(ctx, account, pol)
		for _, id := range slices.Sorted(maps.Keys(broken)) {
			fail(account+"/(store "+id+")", broken[id])
		}
		if len(broken) < len(pol.StoreIDs()) {
			listed = true
		}
		for _, t := range targets {
			data, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			out = append(out, looping.Morsel{ID: t.MorselID(), Data: data})
		}
	}
	if !listed && len(errs) > 0 {
		return nil, fmt.Errorf("no account's stores could be listed: %w", errors.Join(errs...))
	}
	return out, nil
}

// targets lists the (space, store policy) pairs of one account: every
// space of a store the policy names, with each store policy the space's
// policies give it (policy.StorePolicies) whose source or destination holds
// the space. A space only at the destination is a target too: its source
// space is gone (perhaps with its DELETE_SPACE event lost) and the policy
// still covers it, so its items and then the space are deleted there.
// A store that cannot be opened or listed is returned in broken (with the
// error), and the store policies from or to it are left out: without its
// listing a space cannot be told apart from one gone from the source.
func (p *Producer) targets(ctx context.Context, account string, pol *policy.Policy) (out []Target, broken map[string]error) {
	spacesOf := map[string]map[string]bool{}
	broken = map[string]error{}
	var all []string
	for _, id := range pol.StoreIDs() {
		prov, err := p.cfg.Opener.Open(ctx, account, id)
		if err != nil {
			broken[id] = fmt.Errorf("account %s: open store %s: %w", account, id, err)
			continue
		}
		spaces, err := prov.ListSpaces(ctx)
		if err != nil {
			broken[id] = fmt.Errorf("account %s: list spaces of store %s: %w", account, id, err)
			continue
		}
		spacesOf[id] = map[string]bool{}
		for _, s := range spaces {
			spacesOf[id][s] = true
			all = append(all, s)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	for _, space := range all {
		for _, sp := range pol.StorePolicies(space) {
			if broken[sp.SrcStoreID] != nil || broken[sp.DestStoreID] != nil {
				continue
			}
			if spacesOf[sp.SrcStoreID][space] || spacesOf[sp.DestStoreID][space] {
				out = append(out, Target{Account: account, SpaceID: space, StoreID: sp.SrcStoreID, DestStoreID: sp.DestStoreID,
					NoDeletes: pol.MayDestroy(account, space, sp.DestStoreID, "delete") != nil})
			}
		}
	}
	return out, broken
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

// walk lists a space after a content ID; a space that does not exist
// lists as empty.
func walk(ctx context.Context, s storage.Provider, space, after string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for id, err := range storage.Walk(ctx, s, space, after, 0) {
			if errors.Is(err, storage.ErrNotFound) {
				return
			}
			if !yield(id, err) {
				return
			}
		}
	}
}

// Deletes implements looping.Deleter, a bite of at most max deletes at a
// time after m.DeletesMarker (the last destination item queued for
// deletion), so an invocation cut short resumes there. The first bite of
// a morsel whose source space exists starts with the morsel's space-level
// task (the destination space is created, with its ACLs). Each bite queues
// a task for the destination items the source lacks, found by merging the
// two sorted listings (storage.MergeSorted) in constant memory; the bite
// that reaches the end of the listings queues, when the source space is
// gone, the space-level task (which deletes the destination space once it
// is empty — in this run when the item tasks ran first, else in the
// next). A morsel whose destination must not be deleted from
// (Target.NoDeletes) queues no deletes.
func (p *Producer) Deletes(ctx context.Context, run looping.RunInfo, m looping.Morsel, max int, emit looping.Emit) (looping.BiteResult, error) {
	t, err := target(m)
	if err != nil {
		return looping.BiteResult{}, err
	}
	src, dst, err := p.open(ctx, t)
	if err != nil {
		return looping.BiteResult{}, err
	}
	_, err = src.SpaceACLs(ctx, t.SpaceID)
	gone := errors.Is(err, storage.ErrNotFound)
	if err != nil && !gone {
		return looping.BiteResult{}, err
	}
	if !gone && m.DeletesMarker == "" {
		if err := emit(ctx, t.task("")); err != nil {
			return looping.BiteResult{}, err
		}
	}
	if t.NoDeletes {
		p.log.Info("destination is the source of another store policy of the space; no deletes queued", "morsel", m.ID)
		return looping.BiteResult{Marker: m.DeletesMarker, Done: true}, nil
	}
	n, last := 0, m.DeletesMarker
	for e, err := range storage.MergeSorted(walk(ctx, src, t.SpaceID, m.DeletesMarker), walk(ctx, dst, t.SpaceID, m.DeletesMarker)) {
		if err != nil {
			return looping.BiteResult{}, fmt.Errorf("compare %s: %w", m.ID, err)
		}
		if !e.InB || e.InA {
			continue
		}
		if n == max { // more follow: the next bite starts after the last one queued
			p.log.Info("destination items absent from the source queued for deletion", "morsel", m.ID, "count", n, "source_space_gone", gone)
			return looping.BiteResult{Marker: last}, nil
		}
		if err := emit(ctx, t.task(e.ID)); err != nil {
			return looping.BiteResult{}, err
		}
		n, last = n+1, e.ID
	}
	if n > 0 {
		p.log.Info("destination items absent from the source queued for deletion", "morsel", m.ID, "count", n, "source_space_gone", gone)
	}
	if gone {
		if err := emit(ctx, t.task("")); err != nil {
			return looping.BiteResult{}, err
		}
	}
	return looping.BiteResult{Marker: last, Done: true}, nil
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
