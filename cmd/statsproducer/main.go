// Command statsproducer is the looping storage statistics producer
// (docs/ARCHITECTURE.md, Storage statistics and Looping producers), run from
// a scheduler, one invocation at a time: it walks accounts → stores → spaces
// (filtered by --include/--exclude files, as bitproducer's) and queues one
// STORAGE_STATS task per space on the bit queue, whose processor records the
// space's items and bytes in the space_stats table. Spaces the history holds
// items for that a store no longer lists are queued too, so they are
// measured as empty. State is saved after every space (--state), so the next
// invocation resumes where this one stopped.
//
// Exit status: 0 when the run finished, the queue was full, the next run is
// not due yet or another invocation holds the lease; 3 when spaces that kept
// failing were given up for the run; 1 on errors; 2 on bad
// usage. Every flag can also be set with its MILL_* environment variable;
// run `statsproducer --help` for the list.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/millfleet/mill/internal/cli/producercmd"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
	"github.com/millfleet/mill/producers/stats"
)

const summary = `statsproducer — Mill's looping storage statistics producer.

Queues one STORAGE_STATS task per selected space (and per space the history
holds items for that is gone since) on the bit queue while that queue is under
its maximum size; Workman's STORAGE_STATS processor counts the space's items
and bytes from a listing and records them in PostgreSQL (space_stats), one row
per space per run, read by millctl stats and the console. One invocation at a
time (a DynamoDB lease); state saved after every space. Exits 0 when done, not
due, the queue is full or the lease is held; 3 when spaces that kept failing
were given up (the rest was measured; the next run retries them).

Filter files (--include, --exclude): as bitproducer's, one /account/store/space
pattern per line.

Usage: statsproducer [flags]`

var command = producercmd.Command{
	Name: "statsproducer", Summary: summary, StateKey: "statsproducer/state.json", Frequency: "1d",
	Filter: true, Runs: true, Database: "the statistics history", DatabaseWhy: ": the statistics go to PostgreSQL",
	Define: func(fs *flag.FlagSet) producercmd.Own {
		queueName := fs.String("queue", queue.KeyBit, "the queue STORAGE_STATS tasks go to: a queue `key` (named with --queue-prefix) or a full name")
		return producercmd.Own{Build: func(ctx context.Context, e *producercmd.Env) (looping.Config, error) {
			q, err := e.OpenQueue(ctx, queue.Resolve(*e.Flags.QueuePrefix, *queueName))
			if err != nil {
				return looping.Config{}, err
			}
			p, err := stats.New(stats.Config{Source: bit.Source{Registry: e.Registry, Opener: e.Opener, Filter: e.Filter, Logger: e.Logger},
				Known: pgspacestats.New(e.DB.Pool)})
			return looping.Config{Kind: stats.Kind, Producer: p, Queue: q}, err
		}}
	},
}

func main() { command.Main() }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return command.Run(ctx, args, getenv, stdout, stderr)
}
