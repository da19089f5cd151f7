package fleet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/fleet"
)

// interval is the heartbeat interval every test Workman uses.
const interval = time.Second

func TestMain(m *testing.M) { testbin.Main(m) }

// bins builds workman and millctl once for the package (on first use, so
// -short runs build nothing).
func bins(t *testing.T) (workman, millctl string) {
	t.Helper()
	b := testbin.Build(t, "workman", "millctl")
	return b["workman"], b["millctl"]
}

// proc is a started binary.
type proc struct{ *testbin.Proc }

func start(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := testbin.Start(t, testbin.Spec{Path: bin, Args: args, Env: env})
	p.Name = name
	return &proc{p}
}

// logLine is one JSON log line of a Workman.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Level    string    `json:"level"`
	TaskType string    `json:"task_type"`
	Pause    string    `json:"pause"`
}

func (p *proc) lines(t *testing.T) []logLine {
	t.Helper()
	var out []logLine
	for _, line := range p.Lines() {
		var l logLine
		if json.Unmarshal([]byte(line), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// millctl runs millctl with env and returns its stdout; it fails the test
// on a non-zero exit.
func millctl(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	c := testbin.Run(t, time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
	if err := c.Err(); err != nil {
		t.Fatalf("millctl %s: %v\n%s%s", strings.Join(args, " "), err, c.Stdout(), c.Stderr())
	}
	return c.Stdout()
}

// snapshot is `millctl fleet --json`.
func snapshot(t *testing.T, bin string, env []string) fleet.Snapshot {
	t.Helper()
	var s fleet.Snapshot
	out := millctl(t, bin, env, "fleet", "--json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("millctl fleet --json: %v\n%s", err, out)
	}
	return s
}

func byID(s fleet.Snapshot) map[string]fleet.Worker {
	m := map[string]fleet.Worker{}
	for _, w := range s.Workers {
		m[w.ID] = w
	}
	return m
}

// total sums counts of type ty (all types when empty) over the workers.
func total(s fleet.Snapshot, ty string) fleet.Counts {
	var c fleet.Counts
	for _, w := range s.Workers {
		if ty == "" {
			c = c.Add(w.Total())
		} else {
			c = c.Add(w.Counts[ty])
		}
	}
	return c
}

// workmanArgs are the flags every test Workman gets.
func workmanArgs(id, prefix, table string, extra ...string) []string {
	return append([]string{
		"--worker-id", id, "--queue-prefix", prefix, "--fleet-table", table,
		"--heartbeat-interval", interval.String(), "--http-addr", "", "--cloudwatch=false",
		"--receive-wait", "1s", "--queue-backoff-min", "250ms", "--queue-backoff-max", "1s",
		"--long-poll-wait", "1s", "--grace-period", "5s",
	}, extra...)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
