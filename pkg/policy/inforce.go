package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rule names a rule of the duplication policies that a duplication can
// break (Refusal.Rule). The names are stable: dead letters and logs carry
// them.
type Rule string

// The rules.
const (
	// RuleAccountNotListed: the account is not in duplication-accounts.json.
	RuleAccountNotListed Rule = "account-not-listed"
	// RuleNoPolicyFile: the account is listed but has no policy file.
	RuleNoPolicyFile Rule = "no-policy-file"
	// RuleSystemSpace: the space is a system space ("x-…").
	RuleSystemSpace Rule = "system-space"
	// RuleIgnoredSpace: the space is in spacesToIgnore.
	RuleIgnoredSpace Rule = "ignored-space"
	// RuleNoStorePolicy: no store policy of the space goes from that source
	// to that destination.
	RuleNoStorePolicy Rule = "no-store-policy"
	// RuleSourceStore: the store a duplication would delete from or
	// overwrite is the source of a store policy of the space.
	RuleSourceStore Rule = "source-store"
)

// Refusal is the error of a duplication the policies in force do not
// allow (docs/ARCHITECTURE.md, Safety). Its text is "policy: RULE: detail". A refusal for an account that
// has no policy in force (RuleAccountNotListed, RuleNoPolicyFile) also
// wraps ErrNotFound.
type Refusal struct {
	Rule Rule
	Msg  string
}

func (r *Refusal) Error() string { return "policy: " + string(r.Rule) + ": " + r.Msg }

// Unwrap returns ErrNotFound for the rules that say the account has no
// policy in force.
func (r *Refusal) Unwrap() error {
	if r.Rule == RuleAccountNotListed || r.Rule == RuleNoPolicyFile {
		return ErrNotFound
	}
	return nil
}

func refuse(rule Rule, format string, args ...any) *Refusal {
	return &Refusal{Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// Reader is the read side of a Repository: what the readers of the
// policies in force need (a *Cache, or any Repository).
type Reader interface {
	Accounts(ctx context.Context) ([]string, error)
	Policy(ctx context.Context, account string) (*Policy, error)
}

// InForce returns the duplication policy in force for account: its policy
// file, when the account is also listed in duplication-accounts.json. Both
// files are needed, as in DuraCloud (docs/ARCHITECTURE.md, Duplication). Every reader of the policies — the
// audit processor, the dup processor, the dup producer and millctl — asks
// this, so they agree on what is duplicated.
//
// An account with no policy in force gets a *Refusal (RuleAccountNotListed
// or RuleNoPolicyFile) wrapping ErrNotFound; any other error is the
// reader's (a file that cannot be read or parsed).
func InForce(ctx context.Context, r Reader, account string) (*Policy, error) {
	accts, err := r.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(accts, account) {
		return nil, refuse(RuleAccountNotListed, "account %q is not listed in %s", account, AccountsFile)
	}
	p, err := r.Policy(ctx, account)
	if errors.Is(err, ErrNotFound) {
		return nil, refuse(RuleNoPolicyFile, "account %q is listed in %s but has no %s", account, AccountsFile, FileName(account))
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Authorize checks one duplication — space of account, from store src to
// store dst — against the policies in force, and returns the account's
// policy when they allow it. A duplication they do not allow gets a
// *Refusal naming the rule: the account has no policy in force, the space
// is a system space or ignored, or no store policy of the space goes from
// src to dst.
func Authorize(ctx context.Context, r Reader, account, space, src, dst string) (*Policy, error) {
	p, err := InForce(ctx, r, account)
	if err != nil {
		return nil, err
	}
	where := account + "/" + space
	switch {
	case strings.HasPrefix(space, SystemSpacePrefix):
		return nil, refuse(RuleSystemSpace, "%s: spaces starting with %q are never duplicated", where, SystemSpacePrefix)
	case slices.Contains(p.Ignore, space):
		return nil, refuse(RuleIgnoredSpace, "%s: the space is in spacesToIgnore", where)
	}
	want := StorePolicy{SrcStoreID: src, DestStoreID: dst}
	sps := p.StorePolicies(space)
	if !slices.Contains(sps, want) {
		have := "the space has no store policies"
		if len(sps) > 0 {
			names := make([]string, len(sps))
			for i, sp := range sps {
				names[i] = sp.String()
			}
			have = "the space's store policies: " + strings.Join(names, ", ")
		}
		return nil, refuse(RuleNoStorePolicy, "%s: no store policy %s (%s)", where, want, have)
	}
	return p, nil
}

// MayDestroy reports whether duplication may delete from or overwrite
// (content, properties, space ACLs, the space itself) store in space of
// account: never when the store is the source of a store policy of that
// space, for others are copied from it. The refusal (RuleSourceStore) names
// the store policy and what (the action refused).
func (p *Policy) MayDestroy(account, space, store, what string) error {
	if sps := p.ForSource(space, store); len(sps) > 0 {
		return refuse(RuleSourceStore, "%s/%s: store %s is the source of store policy %s, so duplication never deletes or overwrites there (refused: %s)",
			account, space, store, sps[0], what)
	}
	return nil
}

// Relays describes the stores that are the destination of one store policy
// and the source of another in the same list (a chain such as 1→2→3): the
// lists of the spaces, in order, then defaultPolicies. Chains are valid,
// but MayDestroy protects their middle store, so `millctl policy validate`
// and `policy put` print these as notes.
func (p *Policy) Relays() []string {
	var out []string
	relays := func(label string, l []StorePolicy) {
		for _, in := range l {
			for _, on := range l {
				if on.SrcStoreID == in.DestStoreID {
					out = append(out, fmt.Sprintf("%s: store %s receives %s and is the source of %s: duplication copies new items into it but never deletes or overwrites there",
						label, in.DestStoreID, in, on))
				}
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(p.SpacePolicies)) {
		relays("space "+strconvQuote(s), p.SpacePolicies[s])
	}
	relays("defaultPolicies", p.Default)
	return out
}
