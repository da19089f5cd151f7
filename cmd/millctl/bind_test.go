package main

import (
	"context"
	"flag"
	"slices"
	"testing"
)

// twoGroups embeds two flag groups: each hides the other's defineGroup,
// so neither group's flags would be defined.
type twoGroups struct {
	evidenceLogFlags
	evidenceSourceFlags
}

// run names both groups: bind finds them by reflection only.
func (o *twoGroups) run(context.Context, *app, []string) error {
	_, _ = &o.evidenceLogFlags, &o.evidenceSourceFlags
	return nil
}

// builtGroup embeds one group built on two others, and has flags of its
// own.
type builtGroup struct {
	evidenceCrossFlags
	own string
}

func (o *builtGroup) define(fs *flag.FlagSet, _ *app) { fs.StringVar(&o.own, "own", "", "") }

func (*builtGroup) run(context.Context, *app, []string) error { return nil }

func TestBindRefusesTwoFlagGroups(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("bind accepted options embedding two flag groups")
		}
	}()
	bind[twoGroups](flag.NewFlagSet("two", flag.ContinueOnError), &app{})
}

func TestBindDefinesTheGroupAndTheOwnFlags(t *testing.T) {
	fs := flag.NewFlagSet("built", flag.ContinueOnError)
	bind[builtGroup](fs, &app{})
	var got []string
	fs.VisitAll(func(f *flag.Flag) { got = append(got, f.Name) })
	want := []string{"audit-table", "cross-check", "database-url", "key", "log", "own", "since", "until"}
	if !slices.Equal(got, want) {
		t.Errorf("flags %v, want %v", got, want)
	}
}
