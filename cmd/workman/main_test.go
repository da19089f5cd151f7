package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/cli/envflag"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/noop"
)

func TestHelpNamesEveryVariable(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "help") {
		t.Fatalf("err %v", err)
	}
	for _, v := range []string{"MILL_QUEUES", "MILL_QUEUE_PREFIX", "MILL_WORKERS", "MILL_RECEIVE_WAIT", "MILL_TIMEOUTS",
		"MILL_MIN_SHARE", "MILL_GRACE_PERIOD", "MILL_HTTP_ADDR", "MILL_METRICS_INTERVAL",
		"MILL_CLOUDWATCH", "MILL_MAX_ATTEMPTS", "MILL_WORKER_ID", "MILL_LOG_LEVEL", "MILL_WIRE_FORMAT"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("--help does not mention %s", v)
		}
	}
}

func TestBadFlagsReportedTogether(t *testing.T) {
	env := map[string]string{"MILL_LOG_LEVEL": "loud", "MILL_WIRE_FORMAT": "xml", "MILL_TIMEOUTS": "DUP=forever,NOPE=1s", "MILL_MIN_SHARE": "bit=lots", "MILL_DUP_RESTORE_DAYS": "-1",
		"MILL_WORKER_ID": "w\n1", "MILL_PRICE_TABLE": filepath.Join(t.TempDir(), "no-such-prices.json")}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"log-level", "wire-format", "DUP", "NOPE", "min-share: bit", "dup-restore-days -1", "price-table: pricing:", "worker-id:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestQueueNameAndTimeouts(t *testing.T) {
	if got := queue.Resolve("mill-", "dup-high"); got != "mill-dup-high" {
		t.Error(got)
	}
	if got := queue.Resolve("mill-", "custom-queue"); got != "custom-queue" {
		t.Error(got)
	}
	tt, err := parseTimeouts("dup=2h, BIT=-1s")
	if err != nil || tt[task.TypeDup] != 2*time.Hour || tt[task.TypeBit] != -time.Second {
		t.Fatalf("%v %v", tt, err)
	}
	shares, err := parseShares("mill-", "bit=0.2, custom-queue=0.05")
	if err != nil || len(shares) != 2 || shares["mill-bit"] != 0.2 || shares["custom-queue"] != 0.05 {
		t.Fatalf("shares %v %v", shares, err)
	}
	if _, err := parseShares("mill-", "bit"); err == nil {
		t.Fatal("min-share without a fraction accepted")
	}
	if envflag.VarName("grace-period") != "MILL_GRACE_PERIOD" {
		t.Fatal("variable naming changed")
	}
}

// procEnv is a real workman process's test fixture: a work queue, a
// dead-letter queue and the binary.
type procEnv struct {
	t      *testing.T
	bin    string
	client *sqs.Client
	prefix string
	work   *sqsqueue.Queue
	dlq    *sqsqueue.Queue
	record string
}

func newProcEnv(t *testing.T, vt time.Duration) *procEnv {
	t.Helper()
	cfg := testenv.AWS(t)
	client := cfg.SQS()
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, client, prefix)
	ctx := context.Background()
	open := func(name string, vt time.Duration) *sqsqueue.Queue {
		if _, err := (setup.Queue{Client: client, QueueName: prefix + name, VisibilityTimeout: vt}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, client, prefix+name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	dir := t.TempDir()
	bin := testbin.Build(t, "workman")["workman"]
	// The processor wiring opens all seven queues under the prefix; the
	// test works on the bit queue.
	for _, k := range queue.AllKeys {
		if k != queue.KeyBit && k != queue.KeyDeadLetter {
			open(k, 30*time.Second)
		}
	}
	return &procEnv{t: t, bin: bin, client: client, prefix: prefix, work: open(queue.KeyBit, vt),
		dlq: open(queue.KeyDeadLetter, 30*time.Second), record: filepath.Join(dir, "processed")}
}

// start runs the binary; its output goes to the test log on failure.
func (p *procEnv) start(extra ...string) *testbin.Proc {
	args := append([]string{
		"--queue-prefix", p.prefix, "--queues", queue.KeyBit,
		"--http-addr", "", "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false", "--noop-record", p.record, "--log-level", "warn",
		"--task-types", "NOOP",
	}, extra...)
	return testbin.Start(p.t, testbin.Spec{Path: p.bin, Args: args, Env: os.Environ()})
}

func (p *procEnv) send(tasks ...*task.Task) {
	p.t.Helper()
	var es []queue.SendEntry
	for _, tk := range tasks {
		b, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			p.t.Fatal(err)
		}
		es = append(es, queue.SendEntry{Body: b})
	}
	if err := p.work.Send(context.Background(), es...); err != nil {
		p.t.Fatal(err)
	}
}

func (p *procEnv) recorded() []string {
	ids, err := noop.ReadRecord(p.record)
	if err != nil && !os.IsNotExist(err) {
		p.t.Fatal(err)
	}
	return ids
}

func TestMain(m *testing.M) { testbin.Main(m) }

// TestSIGTERMWithTasksInFlight: a real process, a real signal. Tasks that
// finish within the grace period are deleted; the others are visible again
// at once, for another consumer.
func TestSIGTERMWithTasksInFlight(t *testing.T) {
	p := newProcEnv(t, time.Minute) // long enough that only a release explains a quick redelivery
	p.send(
		task.New(task.TypeNoop, map[string]string{"id": "short-1", "sleep": "1s"}),
		task.New(task.TypeNoop, map[string]string{"id": "short-2", "sleep": "1s"}),
		task.New(task.TypeNoop, map[string]string{"id": "long-1", "sleep": "5m"}),
		task.New(task.TypeNoop, map[string]string{"id": "long-2", "sleep": "5m"}),
	)
	cmd := p.start("--workers", "4", "--grace-period", "3s")
	ctx := context.Background()
	testbin.WaitFor(t, 20*time.Second, "4 tasks in flight", func() bool {
		d, err := p.work.Depth(ctx)
		return err == nil && d.InFlight == 4
	})
	time.Sleep(300 * time.Millisecond) // let the workers pick them up
	start := time.Now()
	cmd.Signal(t, syscall.SIGTERM)
	if err := cmd.Wait(t, 45*time.Second); err != nil { // SIGTERM waits for the long poll in flight
		t.Fatalf("exit: %v (want status 0)", err)
	}
	t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	got := strings.Join(p.recorded(), ",")
	if got != "short-1,short-2" && got != "short-2,short-1" {
		t.Fatalf("completed %q, want the two short tasks", got)
	}
	// Another consumer gets the two long ones at once, and nothing else.
	var ids []string
	deadline := time.Now().Add(5 * time.Second)
	for len(ids) < 2 && time.Now().Before(deadline) {
		msgs, err := p.work.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			tk, err := task.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.Get("id"))
		}
	}
	if len(ids) != 2 || !strings.HasPrefix(ids[0], "long") || !strings.HasPrefix(ids[1], "long") {
		t.Fatalf("visible after shutdown: %v, want long-1 and long-2", ids)
	}
	if d, _ := p.work.Depth(ctx); d.Visible != 0 {
		t.Fatalf("depth after: %+v (the short tasks were not deleted?)", d)
	}
}

// TestCrashSafety: kill -9 mid-run, start again: every task completes at
// least once, and the duplicates are at most the messages that were in
// flight (received, not yet deleted) when the process died.
func TestCrashSafety(t *testing.T) {
	const n = 500
	p := newProcEnv(t, 3*time.Second)
	var ts []*task.Task
	for i := range n {
		ts = append(ts, task.New(task.TypeNoop, map[string]string{"id": fmt.Sprint(i)}))
	}
	p.send(ts...)
	args := []string{"--workers", "8", "--noop-sleep", "20ms"}
	cmd := p.start(args...)
	testbin.WaitFor(t, 60*time.Second, "150 tasks done", func() bool { return len(p.recorded()) >= 150 })
	cmd.Kill()
	d, err := p.work.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	inFlight := d.InFlight
	atKill := len(p.recorded())
	t.Logf("killed after %d completions with %d messages in flight", atKill, inFlight)

	cmd2 := p.start(args...)
	testbin.WaitFor(t, 90*time.Second, "every task done", func() bool {
		seen := map[string]bool{}
		for _, id := range p.recorded() {
			seen[id] = true
		}
		return len(seen) == n
	})
	_ = cmd2.Cmd.Process.Signal(syscall.SIGTERM)
	// Shutdown waits for the long poll in flight (at most the 20 s idle
	// poll wait), then the grace period has long been enough.
	if err := cmd2.Wait(t, 45*time.Second); err != nil {
		t.Fatalf("second run exit: %v", err)
	}
	ids := p.recorded()
	dups := len(ids) - n
	t.Logf("%d completions for %d tasks: %d duplicates (in flight at the kill: %d)", len(ids), n, dups, inFlight)
	if int64(dups) > inFlight {
		t.Fatalf("%d duplicates > %d messages in flight at the kill", dups, inFlight)
	}
	if d, _ := p.work.Depth(context.Background()); d.Total() != 0 {
		t.Fatalf("queue not empty at the end: %+v", d)
	}
}

// TestMetricLabelsBounded: tasks of made-up types are dead-lettered and
// counted under task_type="other" on /metrics; only the types this worker
// serves have series of their own. Before, each made-up type made its own
// series (2,000 types, 2,000 series; see pkg/metrics TestPrometheusLabelsBounded).
func TestMetricLabelsBounded(t *testing.T) {
	p := newProcEnv(t, 30*time.Second)
	var tasks []*task.Task
	for i := range 30 {
		tasks = append(tasks, task.New(task.Type(fmt.Sprintf("FORGED_%02d", i)), nil))
	}
	tasks = append(tasks, task.New(task.TypeNoop, map[string]string{"id": "real"}))
	p.send(tasks...)
	addr := testbin.FreeAddr(t)
	cmd := p.start("--http-addr", addr)
	ctx := context.Background()
	testbin.WaitFor(t, 30*time.Second, "30 dead letters and the real task", func() bool {
		d, err := p.dlq.Depth(ctx)
		return err == nil && d.Visible == 30 && len(p.recorded()) == 1
	})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^mill_(?:tasks_total|dead_lettered_total)\{[^}]*task_type="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		types[m[1]] = true
	}
	if len(types) != 2 || !types["other"] || !types["NOOP"] {
		t.Errorf("task_type labels %v, want only NOOP and other", types)
	}
	if !strings.Contains(string(body), `mill_dead_lettered_total{reason="unknown_type",task_type="other"} 30`) {
		t.Errorf("no 30 dead letters under other:\n%s", body)
	}
	cmd.Signal(t, syscall.SIGTERM)
	if err := cmd.Wait(t, 45*time.Second); err != nil { // SIGTERM waits for the long poll in flight
		t.Fatalf("exit: %v", err)
	}
}
