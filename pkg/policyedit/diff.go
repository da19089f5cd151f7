package policyedit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/policy"
)

// Change is one difference between two policies, for a person.
type Change struct {
	// Kind is "added", "removed" or "changed".
	Kind string
	// Field is what changed: `space "photos"`, "defaultPolicies",
	// "spacesToIgnore".
	Field string
	// Before and After say what the field held ("" when absent).
	Before, After string
}

func (c Change) String() string {
	switch c.Kind {
	case "added":
		return fmt.Sprintf("+ %s: %s", c.Field, c.After)
	case "removed":
		return fmt.Sprintf("- %s (was: %s)", c.Field, c.Before)
	}
	return fmt.Sprintf("~ %s: %s → %s", c.Field, c.Before, c.After)
}

// Diff lists what changes from old to new (either may be nil: no policy),
// spaces in id order, then the default policies, then the ignored spaces.
func Diff(old, new *policy.Policy) []Change {
	if old == nil {
		old = &policy.Policy{}
	}
	if new == nil {
		new = &policy.Policy{}
	}
	var out []Change
	spaces := slices.Sorted(maps.Keys(old.SpacePolicies))
	for s := range new.SpacePolicies {
		if _, ok := old.SpacePolicies[s]; !ok {
			spaces = append(spaces, s)
		}
	}
	slices.Sort(spaces)
	for _, s := range spaces {
		a, inOld := old.SpacePolicies[s]
		b, inNew := new.SpacePolicies[s]
		field := fmt.Sprintf("space %q", s)
		switch {
		case !inOld:
			out = append(out, Change{Kind: "added", Field: field, After: storePolicies(b)})
		case !inNew:
			out = append(out, Change{Kind: "removed", Field: field, Before: storePolicies(a)})
		case !slices.Equal(a, b):
			out = append(out, Change{Kind: "changed", Field: field, Before: storePolicies(a), After: storePolicies(b)})
		}
	}
	if !slices.Equal(old.Default, new.Default) {
		c := Change{Kind: "changed", Field: "defaultPolicies", Before: storePolicies(old.Default), After: storePolicies(new.Default)}
		switch {
		case len(old.Default) == 0:
			c.Kind, c.Before = "added", ""
		case len(new.Default) == 0:
			c.Kind, c.After = "removed", ""
		}
		out = append(out, c)
	}
	for _, s := range old.Ignore {
		if !slices.Contains(new.Ignore, s) {
			out = append(out, Change{Kind: "removed", Field: "spacesToIgnore", Before: s})
		}
	}
	for _, s := range new.Ignore {
		if !slices.Contains(old.Ignore, s) {
			out = append(out, Change{Kind: "added", Field: "spacesToIgnore", After: s})
		}
	}
	return out
}

// Format writes store policies as "1→2, 1→3" ("" for none).
func Format(l []policy.StorePolicy) string {
	s := make([]string, len(l))
	for i, sp := range l {
		s[i] = sp.String()
	}
	return strings.Join(s, ", ")
}

// storePolicies is Format, "none" for none.
func storePolicies(l []policy.StorePolicy) string {
	if len(l) == 0 {
		return "none"
	}
	return Format(l)
}

// Summary writes a diff as lines (for the change log).
func Summary(changes []Change) string {
	if len(changes) == 0 {
		return "no change"
	}
	s := make([]string, len(changes))
	for i, c := range changes {
		s[i] = c.String()
	}
	return strings.Join(s, "\n")
}
