package policyedit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// Draft is a policy being edited, as a form holds it: rows in the order
// the editor shows them, possibly invalid (an empty space id, a space
// twice, a store policy missing a store).
type Draft struct {
	Spaces  []SpaceRow
	Default []policy.StorePolicy
	Ignore  []string
}

// SpaceRow is one space and its store policies.
type SpaceRow struct {
	ID       string
	Policies []policy.StorePolicy
}

// DraftOf returns the draft of p: spaces sorted by id.
func DraftOf(p *policy.Policy) Draft {
	var d Draft
	if p == nil {
		return d
	}
	for _, s := range slices.Sorted(maps.Keys(p.SpacePolicies)) {
		d.Spaces = append(d.Spaces, SpaceRow{ID: s, Policies: slices.Clone(p.SpacePolicies[s])})
	}
	d.Default = slices.Clone(p.Default)
	d.Ignore = slices.Clone(p.Ignore)
	return d
}

// Policy builds the policy the draft describes. A later row with the id of
// an earlier one is left out (Check reports it).
func (d Draft) Policy() *policy.Policy {
	p := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{}}
	for _, r := range d.Spaces {
		if _, dup := p.SpacePolicies[r.ID]; !dup {
			p.SpacePolicies[r.ID] = nonNil(r.Policies)
		}
	}
	p.Default = d.Default
	p.Ignore = d.Ignore
	return p
}

func nonNil(l []policy.StorePolicy) []policy.StorePolicy {
	if l == nil {
		return []policy.StorePolicy{}
	}
	return l
}

// Problems are a draft's problems, by field, as messages for a person.
type Problems struct {
	// Spaces[i] are the problems of the draft's row i.
	Spaces [][]string
	// Default, Ignore: the problems of defaultPolicies and spacesToIgnore.
	Default []string
	Ignore  []string
	// Policy: problems of the whole policy no single field owns.
	Policy []string
}

// OK reports whether there are no problems.
func (p Problems) OK() bool {
	for _, s := range p.Spaces {
		if len(s) > 0 {
			return false
		}
	}
	return len(p.Default) == 0 && len(p.Ignore) == 0 && len(p.Policy) == 0
}

// All returns every problem, one per line.
func (p Problems) All() []string {
	var out []string
	for _, s := range p.Spaces {
		out = append(out, s...)
	}
	out = append(out, p.Default...)
	out = append(out, p.Ignore...)
	return append(out, p.Policy...)
}

// Check validates the draft field by field with pkg/policy's rules — the
// ones `millctl policy validate` applies, and whatever pkg/policy adds —
// and, when known is not nil, checks every store id against the account's
// stores (known reports whether an id is registered). Each space row is
// validated as a policy of its own, so a problem lands next to the row
// that has it; what only the whole policy shows (a space both listed and
// ignored) is given to the ignore list, and anything else to Policy.
func Check(d Draft, known func(storeID string) bool) Problems {
	pr := Problems{Spaces: make([][]string, len(d.Spaces))}
	seen := map[string]int{}
	attributed := map[string]bool{}
	for i, r := range d.Spaces {
		if j, dup := seen[r.ID]; dup {
			pr.Spaces[i] = append(pr.Spaces[i], fmt.Sprintf("space %q appears twice (rows %d and %d)", r.ID, j+1, i+1))
			continue
		}
		seen[r.ID] = i
		msgs := problems(&policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{r.ID: nonNil(r.Policies)}}, known)
		pr.Spaces[i] = append(pr.Spaces[i], msgs...)
		mark(attributed, msgs)
	}
	pr.Default = problems(&policy.Policy{Default: d.Default}, known)
	mark(attributed, pr.Default)

	// spacesToIgnore: its own problems, and those that appear only when
	// the listed spaces are beside it.
	listed := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{}}
	for _, r := range d.Spaces {
		listed.SpacePolicies[r.ID] = []policy.StorePolicy{}
	}
	before := set(problems(listed, nil))
	listed.Ignore = d.Ignore
	for _, m := range problems(listed, nil) {
		if !before[m] && !attributed[m] {
			pr.Ignore = append(pr.Ignore, m)
		}
	}
	mark(attributed, pr.Ignore)

	for _, m := range problems(d.Policy(), known) {
		if !attributed[m] {
			pr.Policy = append(pr.Policy, m)
			attributed[m] = true
		}
	}
	return pr
}

// problems runs pkg/policy's validation on p as a file (so store ids are
// checked with positions, like `millctl policy put`) and returns the
// messages without the file position.
func problems(p *policy.Policy, known func(string) bool) []string {
	data, err := p.Marshal()
	if err != nil {
		return []string{err.Error()}
	}
	parsed, err := policy.Parse("policy", data)
	if err == nil && known != nil {
		err = parsed.Check(known)
	}
	return messages(err)
}

// messages flattens a (joined) error into messages, dropping the file
// positions of *jsonpos.Error.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			if e == ErrInvalid {
				continue
			}
			out = append(out, messages(e)...)
		}
		return out
	}
	if pe, ok := errors.AsType[*jsonpos.Error](err); ok {
		return []string{pe.Msg}
	}
	return []string{strings.TrimPrefix(err.Error(), "policy: ")}
}

func mark(m map[string]bool, msgs []string) {
	for _, s := range msgs {
		m[s] = true
	}
}

func set(msgs []string) map[string]bool {
	m := map[string]bool{}
	mark(m, msgs)
	return m
}

// Messages returns the problems err (from Save or Validate) lists, one per
// entry, without file positions.
func Messages(err error) []string { return messages(err) }
