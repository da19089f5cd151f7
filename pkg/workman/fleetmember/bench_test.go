package fleetmember_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman/fleetmember"
	"github.com/millfleet/mill/processors"
)

// BenchmarkHeartbeat counts the DynamoDB requests of a Workman's heartbeat
// on the emulator: beats of a Member with two pauses in force and counts
// for three task types. It reports writes, reads and requests per beat
// (a beat is one interval of one worker): exact counts, so ten beats tell
// (a beat took 2.2 s on moto under load; fifty took two minutes of make
// bench). Run with:
//
//	go test -run '^$' -bench Heartbeat -benchtime 1x ./pkg/workman/fleetmember/
func BenchmarkHeartbeat(b *testing.B) {
	const beats = 10
	cfg := testenv.AWS(b)
	meter := sqsqueue.NewMeter() // counts requests by operation, for any service
	c := cfg.DynamoDB(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, meter.APIOption()) })
	table := testenv.Prefix(b) + "fleet"
	testenv.CreateTable(b, cfg.DynamoDB(), dynamofleet.CreateTableInput(table), dynamofleet.TimeToLiveInput(table))
	ctx := context.Background()
	reg := dynamofleet.New(c, table, nil)
	for _, p := range []fleet.Pause{{Kind: fleet.PauseType, Name: "DUP", At: time.Now()}, {Kind: fleet.PauseQueue, Name: "mill-bit", At: time.Now()}} {
		if err := reg.Pause(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		m, err := fleetmember.New(fleetmember.Config{
			Registry: reg, QueuePrefix: "mill-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Self: fleet.Worker{ID: "bench", Queues: []string{"mill-audit", "mill-dup-high", "mill-bit"}, Pool: 16, Identity: process.Identity{Started: time.Now()}},
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, ty := range []string{"DUP", "BIT", "AUDIT"} {
			m.TaskDone(task.Type(ty), processors.ResultSuccess, time.Millisecond)
		}
		meter.Reset()
		start := time.Now()
		for range beats {
			if err := m.Beat(ctx); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		snap := meter.Snapshot()
		var reqs int64
		for _, n := range snap {
			reqs += n
		}
		writes, reads := float64(snap["PutItem"]), float64(snap["Query"])
		b.ReportMetric(writes/beats, "writes/beat")
		b.ReportMetric(reads/beats, "reads/beat")
		b.ReportMetric(float64(reqs)/beats, "req/beat")
		b.Logf("%d beats: %v requests (%.2f writes, %.2f reads per beat; %v per beat on the emulator)",
			beats, snap, writes/beats, reads/beats, (elapsed / beats).Round(time.Millisecond))
	}
}
