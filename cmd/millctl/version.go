package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the build's version",
		usage:   "Print the module version and Go version this millctl was built with.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				v, goV := "(devel)", ""
				if bi, ok := debug.ReadBuildInfo(); ok {
					v, goV = bi.Main.Version, bi.GoVersion
				}
				fmt.Fprintf(a.stdout, "millctl %s %s\n", v, goV)
				return nil
			}
		},
	})
}
