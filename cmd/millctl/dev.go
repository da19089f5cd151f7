package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/millfleet/mill/internal/app/devmode"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// devWrap, when set, wraps each processor of `millctl dev` (tests use it to
// break one and check that the run fails); devOnConsole is called with the
// console's URL once the run is over (tests use it to look at the pages).
var (
	devWrap      func(task.Type, processors.Handler) processors.Handler
	devOnConsole func(url string)
)

const devUsage = `Embedded dev mode: in-memory queues, filesystem stores under --dir and
in-memory logs, in one process. It seeds two demo accounts (registry and
duplication policies) and --items generated content items through the audited
providers, runs the duplication producer and Workman until idle, injects four
faults (a sour byte in a replica, an item deleted from a replica, a stale
content index checksum, a missing audit entry), runs the bit producer and
Workman until idle, then a second duplication sweep, and prints a summary:
tasks processed by type, items duplicated, bit results by case, repairs,
dead-lettered tasks and where the reports were written.

With --console ADDR (a loopback address, e.g. 127.0.0.1:8080) the Mill
Console is served on the dev mode's queues, policies and bit log from the
start of the run, and stays up after it, with Workman still running, until
Ctrl-C: the policy editor, the live queues, the bit-integrity runs of this
run. No authentication: every visitor is an admin, hence loopback only.

Exit status 0 when every fault was found with its expected case and repaired
or corrected as the bit-integrity rules say, with no false positives and nothing
dead-lettered; 1 otherwise, with the unmet expectations listed.`

// devOptions are the options of dev.
type devOptions struct {
	dir         string
	keep        bool
	items       int
	seed        uint64
	verbose     bool
	consoleAddr string
}

func (o *devOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.dir, "dir", devmode.DefaultDir, "`directory` of the stores, configuration and reports (wiped at start unless --keep)")
	fs.BoolVar(&o.keep, "keep", false, "do not wipe --dir; the run uses a new run-TIME sub-directory of it")
	fs.IntVar(&o.items, "items", devmode.DefaultItems, "number of content `items` to seed (at least 5)")
	fs.Uint64Var(&o.seed, "seed", devmode.DefaultSeed, "`seed` of the generated content and of the fault targets")
	fs.BoolVar(&o.verbose, "v", false, "log every task and component to stderr")
	fs.StringVar(&o.consoleAddr, "console", "", "serve the Mill Console on this loopback `address` (e.g. 127.0.0.1:8080) during and after the run, until interrupted")
}

func (o *devOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.items < devmode.MinItems {
		return usagef("--items must be at least %d", devmode.MinItems)
	}
	cfg := devmode.Config{Dir: o.dir, Keep: o.keep, Items: o.items, Seed: o.seed, Out: a.stdout, Wrap: devWrap,
		Console: o.consoleAddr, OnConsole: devOnConsole}
	if o.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	_, err := devmode.Run(ctx, cfg)
	return err
}
