package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/cli/producercmd"
)

func TestHelpNamesEveryFlagAndVariable(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, &errb)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{
		"MILL_CONFIG_BUCKET; default mill-config", "MILL_CONFIG_DIR", "MILL_QUEUE_PREFIX; default mill-",
		"(default s3://STATE-BUCKET/dupproducer.json)", "MILL_STATE_BUCKET; default mill-state", "MILL_FREQUENCY; default 7d",
		"MILL_MAX_QUEUE_SIZE; default 10000", "MILL_BITE_SIZE; default 1000", "MILL_LEASE_TABLE; default mill-leases",
		"MILL_PROGRESS; default auto", "MILL_WIRE_FORMAT; default json", "Exit status",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestBadFlagsAreUsageErrorsTogether(t *testing.T) {
	env := map[string]string{"MILL_PROGRESS": "sparkles"}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"--frequency", "3x", "--wire-format", "xml", "--max-queue-size", "0"},
		func(k string) string { return env[k] }, &out, &errb)
	var ue producercmd.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v; want a usage error", err)
	}
	for _, want := range []string{"frequency", "sparkles", "wire-format", "max-queue-size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not mention %s", err, want)
		}
	}
}
