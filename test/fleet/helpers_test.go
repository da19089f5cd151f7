package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testbin"
	"github.com/millfleet/mill/pkg/fleet"
)

// interval is the heartbeat interval every test Workman uses.
const interval = time.Second

// binDir holds workman and millctl, built once for the package (on first
// use, so -short runs build nothing).
var (
	binDir   string
	binsOnce sync.Once
	binsErr  error
)

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "mill-fleet-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

func bins(t *testing.T) (workman, millctl string) {
	t.Helper()
	root := testbin.ModuleRoot(t)
	binsOnce.Do(func() {
		c := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/workman", "./cmd/millctl")
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			binsErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return filepath.Join(binDir, "workman"), filepath.Join(binDir, "millctl")
}

// childEnv is this process's environment without MILL_* variables, plus
// extra ("K=V").
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MILL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// proc is a started binary logging to a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func start(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	return p
}

func (p *proc) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

// wait waits up to d for the process to exit and returns its error.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("%s did not exit within %v", p.name, d)
		return nil
	}
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
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// millctl runs millctl with env and returns its stdout; it fails the test
// on a non-zero exit.
func millctl(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("millctl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
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

// eventually polls cond every 100 ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
