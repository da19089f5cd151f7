// Command dupproducer is Mill's looping duplication producer
// (docs/ARCHITECTURE.md, Duplication and Looping producers): run from cron (a
// scheduled container), each invocation continues or starts a run that puts
// DUP tasks for every duplicated space and item on the low-priority
// duplication queue, stopping when the queue is full and resuming there next
// time.
//
// Every flag can also be set with its MILL_* environment variable; run
// `dupproducer --help` for the list.
package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/millfleet/mill/internal/cli/producercmd"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

const summary = `dupproducer — Mill's looping duplication producer.

One invocation per cron tick. It takes the "dupproducer" lease (a DynamoDB
table), loads its state (a local file or an s3://bucket/key object), and, when
a run is due or one is in progress, queues DUP tasks on the low-priority
duplication queue: for every account of duplication-accounts.json that is
active in accounts.json and has a policy file, every space of each store
policy's source or destination store (spacesToIgnore and x- spaces skipped),
first a space-level task and one task per destination item absent from the
source (for a space gone from the source: its destination items, then the
space), then one task per source item, 1000 (--bite-size) at a time,
interleaved across spaces. It stops, saving the
state, when the queue holds --max-queue-size visible messages; the next
invocation resumes there. When the run is complete the next one is due
--frequency after this run's start (at the --start-at time of that day, when
given). --notify-topic-arn announces completed runs and failed invocations.

Exit status: 0 when the run is done, not due, stopped by a full queue, or when
another invocation holds the lease (its holder is printed); 3 when the
invocation gave up stores or spaces that kept failing (or completed a run that
did): the rest was swept, the summary lists them, and the next run retries
them; 1 on errors; 2 on bad flags.

The configuration source (--config-dir, or --config-bucket under
--config-prefix) holds accounts.json, duplication-accounts.json and the
{account}-duplication-policy.json files. AWS access uses the SDK's default
chain (AWS_REGION, AWS_ENDPOINT_URL, profiles, instance or task roles).

Usage: dupproducer [flags]`

var command = producercmd.Command{
	Name: "dupproducer", Summary: summary, StateKey: "dupproducer.json", Frequency: "7d", BiteSize: true, Runs: true,
	Define: func(fs *flag.FlagSet) producercmd.Own {
		queueName := fs.String("queue", queue.KeyDupLow, "the low-priority duplication queue: a queue `key` (named with --queue-prefix) or a full name")
		return producercmd.Own{Build: func(ctx context.Context, e *producercmd.Env) (looping.Config, error) {
			// One run reads each file once (InForce reads the account
			// list per account).
			pols := policy.NewCache(e.Flags.Config.Policies(e.S3), policy.CacheConfig{Refresh: 24 * time.Hour, Logger: e.Logger})
			prod, err := dup.New(dup.Config{Registry: e.Registry, Policies: pols, Opener: e.Opener, Logger: e.Logger})
			if err != nil {
				return looping.Config{}, err
			}
			q, err := e.OpenQueue(ctx, queue.Resolve(*e.Flags.QueuePrefix, *queueName))
			return looping.Config{Kind: dup.Kind, Producer: prod, Queue: q}, err
		}}
	},
}

func main() { command.Main() }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return command.Run(ctx, args, getenv, stdout, stderr)
}
