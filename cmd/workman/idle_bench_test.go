package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/reqcount"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/workman"
)

// idleScale divides every interval of the idle benchmark: its workman
// runs 20 times faster than at the defaults, so a second of it is 20
// seconds of an idle instance.
const idleScale = 20

// BenchmarkIdle counts the AWS requests of an idle workman process, per
// service, behind a request-counting proxy: the real binary on the six
// work queues (empty), with the fleet registry and CloudWatch metrics on,
// and every interval that paces an idle worker divided by idleScale
// (--long-poll-wait, --heartbeat-interval, --metrics-interval). It reports
// requests per minute at the default intervals, per service and in all,
// and the DynamoDB requests per heartbeat (the heartbeat's cost at any
// --heartbeat-interval is that many per interval). Run with:
//
//	go test -run '^$' -bench Idle -benchtime 1x ./cmd/workman/
func BenchmarkIdle(b *testing.B) {
	cfg := testenv.AWS(b)
	counter := reqcount.Start(b, testenv.Endpoint())
	prefix := testenv.Prefix(b)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(b, sqsc, prefix)
	ctx := context.Background()
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: sqsc, QueueName: prefix + k, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			b.Fatal(err)
		}
	}
	table := prefix + "fleet"
	testenv.CreateTable(b, cfg.DynamoDB(), dynamofleet.CreateTableInput(table), dynamofleet.TimeToLiveInput(table))
	bin := testbin.Build(b, "workman")["workman"]
	scaled := func(d time.Duration) string { return (d / idleScale).String() }
	env := append(os.Environ(), "AWS_ENDPOINT_URL="+counter.URL())
	window := 12 * time.Second // 4 minutes at the defaults
	for range b.N {
		p := testbin.Start(b, testbin.Spec{Path: bin, Env: env, Args: []string{
			"--queue-prefix", prefix, "--task-types", "NOOP", "--http-addr", "", "--instance-metadata=false", "--log-level", "warn",
			"--fleet-table", table, "--cloudwatch-namespace", prefix + "Mill",
			"--long-poll-wait", scaled(workman.DefaultIdlePollWait),
			"--heartbeat-interval", scaled(fleet.DefaultInterval),
			"--metrics-interval", scaled(cloudwatchmetrics.DefaultPublishInterval),
		}})
		// Past the start (queue URLs, the first beat), count a window.
		testbin.WaitFor(b, 20*time.Second, "the first heartbeat", func() bool {
			return counter.Take()["dynamodb PutItem"] > 0
		})
		counter.Take()
		time.Sleep(window)
		counts := counter.Take()
		if err := p.Stop(); err != nil {
			b.Fatalf("workman: %v\n%s", err, p.Output())
		}
		perMin := func(n int) float64 { return float64(n) / (window.Minutes() * idleScale) }
		// CloudWatch ("monitoring") is reported even at 0: an idle
		// worker has no metric to publish, and sends nothing.
		bySvc := reqcount.Service(counts)
		total := 0
		for _, svc := range []string{"sqs", "dynamodb", "monitoring", "s3", "sns"} {
			b.ReportMetric(perMin(bySvc[svc]), svc+"-req/min")
		}
		for svc, n := range bySvc {
			total += n
			if !slices.Contains([]string{"sqs", "dynamodb", "monitoring", "s3", "sns"}, svc) {
				b.Errorf("idle requests to %s: %v", svc, counts)
			}
		}
		if bySvc["sqs"] == 0 || bySvc["dynamodb"] == 0 {
			b.Errorf("no long poll or no heartbeat in %v: %v", window, counts)
		}
		b.ReportMetric(perMin(total), "idle-req/min")
		if beats := counts["dynamodb PutItem"]; beats > 0 { // one heartbeat write a beat
			b.ReportMetric(float64(bySvc["dynamodb"])/float64(beats), "dynamodb-req/beat")
		}
		var parts []string
		for k, n := range counts {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
		b.Logf("idle %v at 1/%d of the default intervals: %s", window, idleScale, strings.Join(parts, " "))
	}
}
