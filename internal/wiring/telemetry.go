package wiring

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/buildinfo"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/telemetry"
)

// OTLPEndpointFlagName is the flag every Mill binary reads its trace export
// from (pkg/telemetry).
const OTLPEndpointFlagName = "otlp-endpoint"

// Tracing is --otlp-endpoint as given; Start turns tracing on from it.
type Tracing struct{ endpoint string }

// TracingFlag defines --otlp-endpoint on fs (default off).
func TracingFlag(fs *flag.FlagSet) *Tracing {
	t := &Tracing{}
	fs.StringVar(&t.endpoint, OTLPEndpointFlagName, "", "OpenTelemetry collector to export traces to over OTLP/HTTP: `URL` (http://host:4318) or host:port\n"+
		"(https); empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, else tracing is off (free).\n"+
		"One trace runs from a producer's send across SQS to the task's processor and its S3, DynamoDB\n"+
		"and PostgreSQL calls")
	return t
}

// Start starts tracing for service ("workman", "dupproducer", …): off
// (nil, at no cost) without an endpoint. stop flushes the spans still
// buffered (within 5 s) and stops; call it on exit.
func (t *Tracing) Start(ctx context.Context, service string, getenv func(string) string, logger *slog.Logger) (tr *telemetry.Tracing, stop func(), err error) {
	ep := t.endpoint
	if ep == "" && getenv != nil {
		ep = cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	tr, shutdown, err := telemetry.Start(ctx, telemetry.Export{Endpoint: ep, Service: service, Version: buildinfo.Version()})
	if err != nil {
		return nil, func() {}, fmt.Errorf("--%s: %w", OTLPEndpointFlagName, err)
	}
	if tr.On() && logger != nil {
		logger.Info("exporting traces", "otlp_endpoint", ep)
	}
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil && logger != nil {
			logger.Warn("flushing traces", "error", err)
		}
	}, nil
}

// Install is how every binary turns tracing on, after loading its AWS
// configuration and before building clients or opening queues: Start,
// then the SDK's calls through aws are traced and the queues claims opens
// carry trace context (either may be nil). The returned Tracing goes to
// what Install cannot reach: workman.Config.Tracing, milldb.Config.Tracer
// (AWSConfig.Tracing), queues opened without Claims.
func (t *Tracing) Install(ctx context.Context, service string, getenv func(string) string, logger *slog.Logger, aws *awsconfig.Config, claims *Claims) (*telemetry.Tracing, func(), error) {
	tr, stop, err := t.Start(ctx, service, getenv, logger)
	if err != nil {
		return nil, stop, err
	}
	if aws != nil {
		tr.AWS(&aws.AWS)
	}
	if claims != nil {
		claims.Tracing = tr
	}
	return tr, stop, nil
}
