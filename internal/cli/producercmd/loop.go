package producercmd

import (
	"context"
	"fmt"
	"github.com/millfleet/mill/pkg/runs"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/producers/looping"
)

// NoLease is the --lease-table value that disables the DynamoDB lease (an
// in-memory one instead: local use, a single process). An empty value
// means the same, as an empty table or bucket does for the other binaries'
// flags (workman --fleet-table, --checkpoint-bucket).
const NoLease = "none"

// newLease is the producer lease in the DynamoDB table, or an in-memory lease
// when table is NoLease or empty.
func newLease(aws *awsconfig.Config, table string) lease.Lease {
	if table == NoLease || table == "" {
		return memlease.New(nil)
	}
	return dynamolease.New(aws.DynamoDB(), table, nil)
}

// OpenQueue opens the SQS queue of that name.
func OpenQueue(ctx context.Context, c *sqs.Client, name string) (queue.Queue, error) {
	q, err := sqsqueue.Open(ctx, c, name, sqsqueue.Config{})
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", name, err)
	}
	return q, nil
}

// openState opens the state store at (a path or s3://bucket/key); a bad
// location is a usage error.
func openState(at string, s3c s3blob.API) (looping.StateStore, error) {
	st, err := looping.OpenStateStore(at, s3c)
	if err != nil {
		return nil, Usage(err)
	}
	return st, nil
}

// run is how every producer command ends: lc (its producer, queue, state,
// lease, frequency, sizes and logger set) takes the output flags (message
// format, progress on stderr) and the schedule (Schedule.Apply), runs once,
// and its summary goes to stdout; a failed write is the error of a run
// that succeeded, and a summary with failures is a FailuresError.
func run(ctx context.Context, lc looping.Config, out *Output, sched *Schedule, aws *awsconfig.Config, stdout, stderr io.Writer) error {
	lc.Format, lc.Progress, lc.ProgressOutput = out.Format, out.Progress, stderr
	if err := sched.Apply(&lc, aws, lc.Logger); err != nil {
		return err
	}
	if rec, ok := lc.Runs.(*runs.Recorder); ok && rec.Notifier == nil {
		rec.Notifier = lc.Notifier // a run the producer completes is announced like the rest
	}
	loop, err := looping.New(lc)
	if err != nil {
		return err
	}
	sum, err := loop.Run(ctx)
	if werr := sum.Write(stdout); werr != nil && err == nil {
		err = werr
	}
	if err == nil && sum.HasFailures() {
		err = FailuresError{Failed: len(sum.Failed), NewlyFailed: sum.NewlyFailed}
	}
	return err
}
