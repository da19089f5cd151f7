package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// File names (DuraCloud's).
const (
	// AccountsFile lists the accounts considered for duplication.
	AccountsFile = "duplication-accounts.json"
	// PolicySuffix follows the account id in a policy file's name.
	PolicySuffix = "-duplication-policy.json"
	// SystemSpacePrefix starts the ids of spaces that are never duplicated.
	SystemSpacePrefix = "x-"
)

// FileName returns the policy file name of account.
func FileName(account string) string { return account + PolicySuffix }

// StorePolicy duplicates a space from one store of an account to another:
// the smallest unit of a duplication policy.
type StorePolicy struct {
	SrcStoreID  string `json:"srcStoreId"`
	DestStoreID string `json:"destStoreId"`
}

func (sp StorePolicy) String() string { return sp.SrcStoreID + "→" + sp.DestStoreID }

// Policy is one account's duplication policy.
type Policy struct {
	// SpacePolicies maps a space id to its store policies. A space present
	// with an empty list follows Default, as in DuraCloud's Java Mill (to
	// never duplicate a space, list it in Ignore).
	SpacePolicies map[string][]StorePolicy
	// Default applies to every space not in SpacePolicies.
	Default []StorePolicy
	// Ignore lists spaces that are never duplicated.
	Ignore []string

	// pos remembers where each store policy was read (for Check).
	pos map[posKey]int64
	// file and data are the source, for positioned errors in Check.
	file string
	data []byte
}

type posKey struct {
	space string // "" with dflt for defaultPolicies
	dflt  bool
	index int
}

// StorePolicies returns the store policies that apply to space: none for
// system ("x-") and ignored spaces, the space's own list when it is not
// empty, else the default policies (an empty list falls back to them, as in
// DuraCloud's Java Mill). The result must not be modified.
func (p *Policy) StorePolicies(space string) []StorePolicy {
	if p == nil || !p.Duplicated(space) {
		return nil
	}
	if sp := p.SpacePolicies[space]; len(sp) > 0 {
		return sp
	}
	return p.Default
}

// Duplicated reports whether space may be duplicated at all (it is not a
// system space and not ignored); it may still have no store policies.
func (p *Policy) Duplicated(space string) bool {
	if strings.HasPrefix(space, SystemSpacePrefix) {
		return false
	}
	return p == nil || !slices.Contains(p.Ignore, space)
}

// ForSource returns the store policies of space whose source is storeID
// (what the audit processor needs after a write to that store).
func (p *Policy) ForSource(space, storeID string) []StorePolicy {
	var out []StorePolicy
	for _, sp := range p.StorePolicies(space) {
		if sp.SrcStoreID == storeID {
			out = append(out, sp)
		}
	}
	return out
}

// Spaces returns the spaces listed explicitly with at least one store
// policy, sorted. Other spaces of the account follow Default.
func (p *Policy) Spaces() []string {
	var out []string
	for s, sp := range p.SpacePolicies {
		if len(sp) > 0 && p.Duplicated(s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// StoreIDs returns every store id the policy names, sorted.
func (p *Policy) StoreIDs() []string {
	set := map[string]bool{}
	add := func(l []StorePolicy) {
		for _, sp := range l {
			set[sp.SrcStoreID], set[sp.DestStoreID] = true, true
		}
	}
	for _, l := range p.SpacePolicies {
		add(l)
	}
	add(p.Default)
	return slices.Sorted(maps.Keys(set))
}

// Equal reports whether p and q say the same thing.
func (p *Policy) Equal(q *Policy) bool {
	if len(p.SpacePolicies) != len(q.SpacePolicies) {
		return false
	}
	for s, l := range p.SpacePolicies {
		m, ok := q.SpacePolicies[s]
		if !ok || !slices.Equal(l, m) {
			return false
		}
	}
	return slices.Equal(p.Default, q.Default) && slices.Equal(p.Ignore, q.Ignore)
}

// wire is the file format for Marshal.
type wire struct {
	SpacePolicies map[string][]StorePolicy `json:"spaceDuplicationStorePolicies"`
	Default       []StorePolicy            `json:"defaultPolicies,omitempty"`
	Ignore        []string                 `json:"spacesToIgnore,omitempty"`
}

// Marshal writes p in the policy file format (indented, keys sorted).
// Parse(Marshal(p)) equals p.
func (p *Policy) Marshal() ([]byte, error) {
	w := wire{SpacePolicies: make(map[string][]StorePolicy, len(p.SpacePolicies)), Default: p.Default, Ignore: p.Ignore}
	for s, l := range p.SpacePolicies {
		if l == nil {
			l = []StorePolicy{}
		}
		w.SpacePolicies[s] = l
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("policy: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

// Parse reads a policy file. name is used in errors ("file:line:col: …").
// It rejects invalid JSON, unknown or repeated keys, values of the wrong
// type, empty ids, a store policy whose source is its destination, repeated
// store policies, cycles between stores within one space's store policies
// (or the default ones) such as 1→2 with 2→1, two store policies of one
// space (or the default ones) into the same destination such as 1→3 with
// 2→3, system ("x-") spaces given
// policies, and spaces both listed and ignored — every problem at once
// (errors.Join of *jsonpos.Error).
func Parse(name string, data []byte) (*Policy, error) {
	if err := jsonpos.Check(name, data); err != nil {
		return nil, err
	}
	p := &Policy{SpacePolicies: map[string][]StorePolicy{}, pos: map[posKey]int64{}, file: name, data: data}
	w := jsonpos.NewWalker(name, data)
	var errs []error
	if _, err := w.Delim('{', "a duplication policy"); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	ignorePos := map[string]int64{}
	for w.More() {
		key, off, err := w.String("key")
		if err != nil {
			return nil, err
		}
		if seen[key] {
			errs = append(errs, w.Errorf(off, "key %q appears twice", key))
		}
		seen[key] = true
		switch key {
		case "spaceDuplicationStorePolicies":
			if _, err := w.Delim('{', key); err != nil {
				return nil, err
			}
			for w.More() {
				space, soff, err := w.String("space id")
				if err != nil {
					return nil, err
				}
				if _, dup := p.SpacePolicies[space]; dup {
					errs = append(errs, w.Errorf(soff, "space %q appears twice", space))
				}
				switch {
				case space == "":
					errs = append(errs, w.Errorf(soff, "empty space id"))
				case strings.HasPrefix(space, SystemSpacePrefix):
					errs = append(errs, w.Errorf(soff, "space %q: spaces starting with %q are never duplicated", space, SystemSpacePrefix))
				}
				list, lerrs, err := parseList(w, p, space, false, "store policies of space "+strconvQuote(space))
				if err != nil {
					return nil, err
				}
				errs = append(errs, lerrs...)
				p.SpacePolicies[space] = list
				p.pos[posKey{space: space, index: -1}] = soff
			}
			if err := w.End(); err != nil {
				return nil, err
			}
		case "defaultPolicies":
			list, lerrs, err := parseList(w, p, "", true, key)
			if err != nil {
				return nil, err
			}
			errs = append(errs, lerrs...)
			p.Default = list
		case "spacesToIgnore":
			if _, err := w.Delim('[', key); err != nil {
				return nil, err
			}
			for w.More() {
				s, ioff, err := w.String("an ignored space")
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if s == "" {
					errs = append(errs, w.Errorf(ioff, "empty space id in spacesToIgnore"))
					continue
				}
				if _, dup := ignorePos[s]; dup {
					errs = append(errs, w.Errorf(ioff, "space %q is ignored twice", s))
					continue
				}
				ignorePos[s] = ioff
				p.Ignore = append(p.Ignore, s)
			}
			if err := w.End(); err != nil {
				return nil, err
			}
		default:
			errs = append(errs, w.Errorf(off, "unknown key %q (want spaceDuplicationStorePolicies, defaultPolicies or spacesToIgnore)", key))
			if err := w.Skip(); err != nil {
				return nil, err
			}
		}
	}
	if err := w.EndDocument(); err != nil {
		return nil, err
	}
	for _, s := range p.Ignore {
		if _, listed := p.SpacePolicies[s]; listed {
			errs = append(errs, w.Errorf(ignorePos[s], "space %q is both listed in spaceDuplicationStorePolicies and ignored", s))
		}
	}
	if len(errs) > 0 {
		jsonpos.Sort(errs)
		return nil, errors.Join(errs...)
	}
	return p, nil
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// parseList reads an array of store policies. Problems with the entries are
// returned in errs; err is a structural failure that ends parsing.
func parseList(w *jsonpos.Walker, p *Policy, space string, dflt bool, what string) (list []StorePolicy, errs []error, err error) {
	if _, err := w.Delim('[', what); err != nil {
		return nil, nil, err
	}
	list = []StorePolicy{}
	for i := 0; w.More(); i++ {
		off, err := w.Delim('{', "a store policy")
		if err != nil {
			return nil, nil, err
		}
		var sp StorePolicy
		have := map[string]bool{}
		for w.More() {
			k, koff, err := w.String("key")
			if err != nil {
				return nil, nil, err
			}
			switch k {
			case "srcStoreId", "destStoreId":
				if have[k] {
					errs = append(errs, w.Errorf(koff, "key %q appears twice", k))
				}
				have[k] = true
				v, _, verr := w.String(k)
				if verr != nil {
					errs = append(errs, verr)
					continue
				}
				if k == "srcStoreId" {
					sp.SrcStoreID = v
				} else {
					sp.DestStoreID = v
				}
			default:
				errs = append(errs, w.Errorf(koff, "unknown key %q in a store policy (want srcStoreId and destStoreId)", k))
				if err := w.Skip(); err != nil {
					return nil, nil, err
				}
			}
		}
		if err := w.End(); err != nil {
			return nil, nil, err
		}
		switch {
		case sp.SrcStoreID == "" || sp.DestStoreID == "":
			errs = append(errs, w.Errorf(off, "store policy needs a non-empty srcStoreId and destStoreId"))
		case sp.SrcStoreID == sp.DestStoreID:
			errs = append(errs, w.Errorf(off, "store policy duplicates store %q onto itself", sp.SrcStoreID))
		case slices.Contains(list, sp):
			errs = append(errs, w.Errorf(off, "store policy %s appears twice", sp))
		}
		p.pos[posKey{space: space, dflt: dflt, index: len(list)}] = off
		if c := cycle(list, sp); c != "" {
			errs = append(errs, w.Errorf(off, "%s: the store policies form a cycle %s; Mill refuses cycles between stores (each would overwrite and delete what the other holds)", label(space, dflt), c))
		}
		if other := sameDestination(list, sp); other != nil {
			errs = append(errs, w.Errorf(off, "%s: store %q is the destination of two store policies, %s and %s; Mill refuses them (each would overwrite and delete what the other copied)",
				label(space, dflt), sp.DestStoreID, *other, sp))
		}
		list = append(list, sp)
	}
	if err := w.End(); err != nil {
		return nil, nil, err
	}
	return list, errs, nil
}

// label names a list of store policies in errors.
func label(space string, dflt bool) string {
	if dflt {
		return "defaultPolicies"
	}
	return "space " + strconvQuote(space)
}

// sameDestination returns the store policy of list that already has sp's
// destination with another source, or nil. A store with two sources in one
// space would follow both: whatever one source lacks, its DUP tasks delete
// at the destination, and the other's copy it back.
func sameDestination(list []StorePolicy, sp StorePolicy) *StorePolicy {
	for i, e := range list {
		if e.DestStoreID == sp.DestStoreID && e.SrcStoreID != sp.SrcStoreID && sp.DestStoreID != "" {
			return &list[i]
		}
	}
	return nil
}

// cycle returns the cycle that adding sp to the store policies in list
// closes ("1→2→1", starting at sp's destination), or "" when it closes
// none: a cycle is a path from sp's destination back to its source.
func cycle(list []StorePolicy, sp StorePolicy) string {
	if sp.SrcStoreID == "" || sp.DestStoreID == "" || sp.SrcStoreID == sp.DestStoreID {
		return ""
	}
	// Breadth-first from the destination; parent remembers the path.
	parent := map[string]string{sp.DestStoreID: ""}
	queue := []string{sp.DestStoreID}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if at == sp.SrcStoreID {
			path := []string{sp.DestStoreID}
			for n := at; n != sp.DestStoreID; n = parent[n] {
				path = slices.Insert(path, 1, n)
			}
			return strings.Join(append(path, sp.DestStoreID), "→")
		}
		for _, e := range list {
			if _, seen := parent[e.DestStoreID]; e.SrcStoreID == at && !seen {
				parent[e.DestStoreID] = at
				queue = append(queue, e.DestStoreID)
			}
		}
	}
	return ""
}

// Check verifies that every store id the policy names is known (known
// returns false for a store that is not registered for the account).
// Errors are positioned in the file p was parsed from; for a policy built
// in code they name the space and index instead.
func (p *Policy) Check(known func(storeID string) bool) error {
	var errs []error
	check := func(space string, dflt bool, l []StorePolicy) {
		for i, sp := range l {
			for _, id := range []string{sp.SrcStoreID, sp.DestStoreID} {
				if known(id) {
					continue
				}
				msg := fmt.Sprintf("store %q is not a registered store of the account", id)
				if off, ok := p.pos[posKey{space: space, dflt: dflt, index: i}]; ok && p.data != nil {
					errs = append(errs, jsonpos.At(p.file, p.data, off, "%s", msg))
					continue
				}
				where := "defaultPolicies"
				if !dflt {
					where = "space " + strconvQuote(space)
				}
				errs = append(errs, fmt.Errorf("policy: %s[%d]: %s", where, i, msg))
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(p.SpacePolicies)) {
		check(s, false, p.SpacePolicies[s])
	}
	check("", true, p.Default)
	jsonpos.Sort(errs)
	return errors.Join(errs...)
}

// Validate checks a policy built in code the way Parse checks a file.
func (p *Policy) Validate() error {
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	_, err = Parse("policy", b)
	return err
}

// ParseAccounts reads duplication-accounts.json: a JSON array of distinct,
// non-empty account ids.
func ParseAccounts(name string, data []byte) ([]string, error) {
	if err := jsonpos.Check(name, data); err != nil {
		return nil, err
	}
	w := jsonpos.NewWalker(name, data)
	if _, err := w.Delim('[', "the account list"); err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	seen := map[string]bool{}
	for w.More() {
		a, off, err := w.String("an account id")
		switch {
		case err != nil:
			errs = append(errs, err)
		case a == "":
			errs = append(errs, w.Errorf(off, "empty account id"))
		case seen[a]:
			errs = append(errs, w.Errorf(off, "account %q is listed twice", a))
		default:
			seen[a] = true
			out = append(out, a)
		}
	}
	if err := w.EndDocument(); err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// MarshalAccounts writes an account list.
func MarshalAccounts(accounts []string) ([]byte, error) {
	if accounts == nil {
		accounts = []string{}
	}
	b, err := json.MarshalIndent(accounts, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
