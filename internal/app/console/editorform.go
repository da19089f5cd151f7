package console

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
	"github.com/millfleet/mill/pkg/stores"
)

// defaultRule is the store policy a new row starts with: the primary store
// to the first other one.
func defaultRule(a *stores.Account) policy.StorePolicy {
	var sp policy.StorePolicy
	if p := a.Primary(); p != nil {
		sp.SrcStoreID = p.ID
	}
	for _, st := range a.Stores {
		if st.ID != sp.SrcStoreID {
			sp.DestStoreID = st.ID
			break
		}
	}
	return sp
}

// parseDraft reads the editor's fields: sN (space id of row N), sN.M.src
// and sN.M.dst (its store policies), d.M.src and d.M.dst (the defaults),
// ignore (one space per line). Rows and policies keep their numeric order.
func parseDraft(form url.Values) (policyedit.Draft, error) {
	var d policyedit.Draft
	rows := map[int]*policyedit.SpaceRow{}
	rules := map[int]map[int]*policy.StorePolicy{} // row (-1: default) → index → rule
	rule := func(row, idx int) *policy.StorePolicy {
		if rules[row] == nil {
			rules[row] = map[int]*policy.StorePolicy{}
		}
		if rules[row][idx] == nil {
			rules[row][idx] = &policy.StorePolicy{}
		}
		return rules[row][idx]
	}
	for k, vs := range form {
		v := ""
		if len(vs) > 0 {
			v = strings.TrimSpace(vs[0])
		}
		switch {
		case strings.HasPrefix(k, "s"):
			parts := strings.Split(k[1:], ".")
			n, err := strconv.Atoi(parts[0])
			if err != nil || n < 0 || n >= maxEditorRows {
				continue // not an editor field
			}
			if rows[n] == nil {
				rows[n] = &policyedit.SpaceRow{}
			}
			switch {
			case len(parts) == 1:
				rows[n].ID = v
			case len(parts) == 3:
				m, err := strconv.Atoi(parts[1])
				if err != nil || m < 0 || m >= maxRowPolicies {
					return d, fmt.Errorf("bad field %q", k)
				}
				setRule(rule(n, m), parts[2], v)
			}
		case strings.HasPrefix(k, "d."):
			parts := strings.Split(k, ".")
			if len(parts) != 3 {
				continue
			}
			m, err := strconv.Atoi(parts[1])
			if err != nil || m < 0 || m >= maxRowPolicies {
				return d, fmt.Errorf("bad field %q", k)
			}
			setRule(rule(-1, m), parts[2], v)
		case k == "ignore":
			for _, l := range strings.Split(strings.Join(vs, "\n"), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					d.Ignore = append(d.Ignore, l)
				}
			}
		}
	}
	ordered := func(m map[int]*policy.StorePolicy) []policy.StorePolicy {
		var idx []int
		for i := range m {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		out := make([]policy.StorePolicy, 0, len(idx))
		for _, i := range idx {
			out = append(out, *m[i])
		}
		return out
	}
	var idx []int
	for n := range rows {
		idx = append(idx, n)
	}
	slices.Sort(idx)
	for _, n := range idx {
		row := *rows[n]
		row.Policies = ordered(rules[n])
		d.Spaces = append(d.Spaces, row)
	}
	d.Default = ordered(rules[-1])
	return d, nil
}

func setRule(sp *policy.StorePolicy, field, v string) {
	switch field {
	case "src":
		sp.SrcStoreID = v
	case "dst":
		sp.DestStoreID = v
	}
}

// freshRule is the store policy a new entry starts with: the first pair of
// the account's stores, primary first, that the list does not hold yet.
func freshRule(a *stores.Account, list []policy.StorePolicy) policy.StorePolicy {
	first := defaultRule(a)
	srcs := []string{first.SrcStoreID}
	for _, st := range a.Stores {
		if st.ID != first.SrcStoreID {
			srcs = append(srcs, st.ID)
		}
	}
	for _, src := range srcs {
		for _, dst := range a.Stores {
			sp := policy.StorePolicy{SrcStoreID: src, DestStoreID: dst.ID}
			if src != dst.ID && !slices.Contains(list, sp) {
				return sp
			}
		}
	}
	return first
}

// applyOp applies an editor action to the draft: add-space, remove-space:N,
// add-rule:N, remove-rule:N:M, add-default, remove-default:M; "" and check
// change nothing.
func applyOp(d *policyedit.Draft, op string, a *stores.Account) error {
	name, arg, _ := strings.Cut(op, ":")
	nums := []int{}
	if arg != "" {
		for _, p := range strings.Split(arg, ":") {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return fmt.Errorf("bad action %q", op)
			}
			nums = append(nums, n)
		}
	}
	inRange := func(i, n int) bool { return i >= 0 && i < n }
	switch {
	case name == "" || name == "check":
	case name == "add-space" && len(nums) == 0:
		if len(d.Spaces) >= maxEditorRows {
			return fmt.Errorf("at most %d spaces", maxEditorRows)
		}
		d.Spaces = append(d.Spaces, policyedit.SpaceRow{Policies: []policy.StorePolicy{freshRule(a, nil)}})
	case name == "remove-space" && len(nums) == 1 && inRange(nums[0], len(d.Spaces)):
		d.Spaces = slices.Delete(d.Spaces, nums[0], nums[0]+1)
	case name == "add-rule" && len(nums) == 1 && inRange(nums[0], len(d.Spaces)):
		if len(d.Spaces[nums[0]].Policies) >= maxRowPolicies {
			return fmt.Errorf("at most %d store policies per space", maxRowPolicies)
		}
		d.Spaces[nums[0]].Policies = append(d.Spaces[nums[0]].Policies, freshRule(a, d.Spaces[nums[0]].Policies))
	case name == "remove-rule" && len(nums) == 2 && inRange(nums[0], len(d.Spaces)) && inRange(nums[1], len(d.Spaces[nums[0]].Policies)):
		row := &d.Spaces[nums[0]]
		row.Policies = slices.Delete(row.Policies, nums[1], nums[1]+1)
	case name == "add-default" && len(nums) == 0:
		if len(d.Default) >= maxRowPolicies {
			return fmt.Errorf("at most %d default store policies", maxRowPolicies)
		}
		d.Default = append(d.Default, freshRule(a, d.Default))
	case name == "remove-default" && len(nums) == 1 && inRange(nums[0], len(d.Default)):
		d.Default = slices.Delete(d.Default, nums[0], nums[0]+1)
	default:
		return fmt.Errorf("unknown action %q", op)
	}
	return nil
}
