package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

const versionUsage = "Print the module version and Go version this millctl was built with."

// versionOptions are the options of version: none.
type versionOptions struct{}

func (*versionOptions) define(*flag.FlagSet, *app) {}

func (*versionOptions) run(_ context.Context, a *app, _ []string) error {
	v, goV := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v, goV = bi.Main.Version, bi.GoVersion
	}
	fmt.Fprintf(a.stdout, "millctl %s %s\n", v, goV)
	return nil
}
