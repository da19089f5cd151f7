package wiring

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/awsconfig"
)

// TestTracingInstall: without an endpoint tracing is off and nothing is
// touched; the flag or the standard OTEL variables turn it on, tracing the
// SDK's calls and the queues Claims opens; a bad endpoint is an error
// naming the flag.
func TestTracingInstall(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	install := func(args []string, env map[string]string) (*awsconfig.Config, *Claims, bool, error) {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		tf := TracingFlag(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		aws, claims := &awsconfig.Config{}, &Claims{}
		tr, stop, err := tf.Install(t.Context(), "test", func(k string) string { return env[k] }, logger, aws, claims)
		stop()
		return aws, claims, tr.On(), err
	}
	aws, claims, on, err := install(nil, nil)
	if err != nil || on || claims.Tracing != nil || len(aws.AWS.APIOptions) != 0 {
		t.Errorf("no endpoint: on %v, claims %v, %d API options, %v; want off, untouched", on, claims.Tracing, len(aws.AWS.APIOptions), err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--otlp-endpoint", "http://127.0.0.1:4318"}, nil},
		{nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318"}},
	} {
		aws, claims, on, err := install(c.args, c.env)
		if err != nil || !on || claims.Tracing == nil || len(aws.AWS.APIOptions) != 1 {
			t.Errorf("%v %v: on %v, claims %v, %d API options, %v; want on, installed", c.args, c.env, on, claims.Tracing, len(aws.AWS.APIOptions), err)
		}
	}
	for _, bad := range []string{"ftp://127.0.0.1:4318", "http://user:pw@127.0.0.1:4318", "http://127.0.0.1:4318/?a=b", "host/path", "http://", "user:pw@127.0.0.1:4318"} {
		if _, _, on, err := install([]string{"--otlp-endpoint", bad}, nil); err == nil || on || !strings.Contains(err.Error(), "--otlp-endpoint") || strings.Contains(err.Error(), "pw") {
			t.Errorf("--otlp-endpoint %q: on %v, error %v; want an error naming the flag, without the password", bad, on, err)
		}
	}
}
