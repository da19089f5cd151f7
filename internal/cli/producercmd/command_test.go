package producercmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/producers/looping"
)

// bare is a producer with none of the optional flag groups and one flag of
// its own.
func bare(build func(context.Context, *Env) (looping.Config, error)) Command {
	return Command{
		Name: "bare", Summary: "bare — a test producer", StateKey: "bare.json", Frequency: "2d",
		Define: func(fs *flag.FlagSet) Own {
			mine := fs.String("mine", "ok", "a flag of its own")
			return Own{
				Check: func() []error {
					if *mine != "ok" {
						return []error{errors.New("--mine is not ok")}
					}
					return nil
				},
				Build: build,
			}
		},
	}
}

func TestCommandDefinesOnlyTheGroupsItAsksFor(t *testing.T) {
	var stderr bytes.Buffer
	err := bare(nil).Run(t.Context(), []string{"--help"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	help := stderr.String()
	for _, want := range []string{"bare — a test producer", "--mine", "MILL_FREQUENCY; default 2d", "s3://STATE-BUCKET/bare.json",
		"MILL_CONFIG_BUCKET; default mill-config", "MILL_STATE_BUCKET; default mill-state", "MILL_LEASE_TTL", "MILL_START_AT"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, absent := range []string{"--bite-size", "--database-url", "--include", "--exclude"} {
		if strings.Contains(help, absent) {
			t.Errorf("--help has %s, which bare did not ask for", absent)
		}
	}
}

// TestCommandRecordingRuns: a command that records its runs has an
// optional --runs-database-url (not the fleet's --database-url, which it
// would otherwise take from MILL_DATABASE_URL unasked) and the reports
// flags.
func TestCommandRecordingRuns(t *testing.T) {
	var stderr bytes.Buffer
	c := bare(nil)
	c.Runs = true
	err := c.Run(t.Context(), []string{"--help"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"--runs-database-url", "MILL_RUNS_DATABASE_URL", "without it, runs are not recorded", "--reports-bucket", "--reports-prefix"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestCommandReportsEveryProblemAsOneUsageError(t *testing.T) {
	c := bare(func(context.Context, *Env) (looping.Config, error) {
		t.Fatal("built despite bad flags")
		return looping.Config{}, nil
	})
	c.BiteSize, c.Database, c.DatabaseWhy = true, "the test tables", ": the test needs it"
	env := map[string]string{"MILL_FREQUENCY": "5x", "MILL_MINE": "bad"}
	err := c.Run(t.Context(), []string{"--bite-size", "0", "--max-queue-size", "0", "--sends-in-flight", "0", "--config-bucket", "", "--state-bucket", ""},
		func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
	var ue UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v; want a UsageError", err)
	}
	for _, want := range []string{"--frequency (MILL_FREQUENCY)", "--bite-size 0", "--max-queue-size 0", "--sends-in-flight 0", "--state or --state-bucket",
		"--config-bucket or --config-dir", "--database-url (MILL_DATABASE_URL) is required: the test needs it", "--mine is not ok"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestNoLeaseIsInMemory(t *testing.T) {
	for _, table := range []string{NoLease, ""} {
		if _, ok := newLease(nil, table).(*memlease.Lease); !ok {
			t.Fatalf("--lease-table %q: %T, want an in-memory lease", table, newLease(nil, table))
		}
	}
}
