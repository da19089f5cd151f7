package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Export says where spans go. The zero value is tracing off.
type Export struct {
	// Endpoint is the OTLP/HTTP collector's base URL
	// (http://collector:4318; traces are posted to /v1/traces) or
	// host:port (https). Empty: tracing off.
	Endpoint string
	// Service is the service.name of the spans ("workman", "bitproducer", …).
	Service string
	// Version is service.version (empty: none).
	Version string
}

// Start starts tracing as e says: OTLP over HTTP to e.Endpoint, spans
// batched. It returns nil Tracing (off) and a no-op shutdown when e has no
// endpoint. shutdown flushes what is buffered (within ctx) and stops.
func Start(ctx context.Context, e Export) (t *Tracing, shutdown func(context.Context) error, err error) {
	noShutdown := func(context.Context) error { return nil }
	if e.Endpoint == "" {
		return nil, noShutdown, nil
	}
	opts, err := endpointOptions(e.Endpoint)
	if err != nil {
		return nil, noShutdown, err
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, noShutdown, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(e.Service)}
	if e.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(e.Version))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)))
	return New(tp), tp.Shutdown, nil
}

// endpointOptions reads an endpoint: a URL with scheme http or https (and
// an optional path, default /v1/traces), or host:port (https).
func endpointOptions(ep string) ([]otlptracehttp.Option, error) {
	shown := ep // never a password: see below
	bad := func(why string) error { return fmt.Errorf("telemetry: OTLP endpoint %q: %s", shown, why) }
	if !strings.Contains(ep, "://") {
		if strings.Contains(ep, "@") {
			shown = "(redacted: holds user information)"
		}
		if strings.ContainsAny(ep, "/?#@ ") {
			return nil, bad("want a URL (http://host:4318) or host:port")
		}
		return []otlptracehttp.Option{otlptracehttp.WithEndpoint(ep)}, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		shown = "(unparsable URL)"
		return nil, bad("not a URL")
	}
	shown = u.Redacted()
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, bad("scheme must be http or https")
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, bad("want http(s)://host:port[/path], without user, query or fragment")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}, nil
}
