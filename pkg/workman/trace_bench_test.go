package workman

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/telemetry"
)

// BenchmarkEmulatorNoopTraced is BenchmarkEmulatorNoop with tracing on
// (every span sampled and recorded, then dropped: no exporter), for the
// cost of tracing when on; BenchmarkEmulatorNoop is the same run with
// tracing off, as by default. Run with:
//
//	go test -run '^$' -bench EmulatorNoop -benchtime 1x ./pkg/workman/
func BenchmarkEmulatorNoopTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := telemetry.New(tp)
	benchEmulatorNoop(b, func(q queue.Queue, c *Config) queue.Queue {
		c.Tracing = tr
		return tr.Queue(q)
	})
}
