//go:build faults

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/noop"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// binary builds ./cmd/<name> once per package run and returns its path.
func binary(t *testing.T, name string) string {
	t.Helper()
	return testbin.Build(t, name)[name]
}

// ensureQueue creates (or reuses) a queue on the emulator and opens it.
func ensureQueue(t *testing.T, ctx context.Context, api interface {
	sqsqueue.API
	setup.SQSAPI
}, name string, vt time.Duration) *sqsqueue.Queue {
	t.Helper()
	if _, err := (setup.Queue{Client: api, QueueName: name, VisibilityTimeout: vt}).Ensure(ctx); err != nil {
		t.Fatalf("ensure queue %s: %v", name, err)
	}
	q, err := sqsqueue.Open(ctx, api, name, sqsqueue.Config{})
	if err != nil {
		t.Fatalf("open queue %s: %v", name, err)
	}
	return q
}

// scaled returns n scaled by MILL_FAULTS_SCALE (default 1: the counts of
// the fault plan), at least min. A loaded emulator can run the same tests
// on fewer items (e.g. MILL_FAULTS_SCALE=0.25); the figures are reported
// with the counts actually used.
func scaled(n, least int) int {
	f := 1.0
	if v := os.Getenv("MILL_FAULTS_SCALE"); v != "" {
		if x, err := strconv.ParseFloat(v, 64); err == nil && x > 0 {
			f = x
		}
	}
	return max(least, int(float64(n)*f))
}

// itemID is the content ID of item i of a store the tests fill.
func itemID(i int) string { return fmt.Sprintf("item-%05d", i) }

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ensureAllQueues creates the seven queues under prefix (workman opens
// every queue its processors may send to, whatever it receives from).
func ensureAllQueues(t *testing.T, ctx context.Context, api interface {
	sqsqueue.API
	setup.SQSAPI
}, prefix string) {
	t.Helper()
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: api, QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatalf("ensure queue %s: %v", queue.Name(prefix, k), err)
		}
	}
}

// noopQueues creates, under a fresh prefix, the NOOP work queue (with
// visibility timeout vt), the seven Mill queues workman opens and the
// dead-letter queue, all removed when the test ends.
func noopQueues(t *testing.T, ctx context.Context, cfg *awsconfig.Config, vt time.Duration) (prefix string, work, dead *sqsqueue.Queue) {
	t.Helper()
	prefix, work, dead, _ = noopQueuesCounted(t, ctx, cfg, vt)
	return prefix, work, dead
}

// noopQueuesCounted is noopQueues whose queues count the sends the SDK
// retried: each may have queued a task twice.
func noopQueuesCounted(t *testing.T, ctx context.Context, cfg *awsconfig.Config, vt time.Duration) (prefix string, work, dead *sqsqueue.Queue, retries *testenv.SendRetries) {
	t.Helper()
	prefix, retries = testenv.Prefix(t), &testenv.SendRetries{}
	sqsc := cfg.SQS(retries.Option)
	testenv.CleanupQueues(t, sqsc, prefix)
	work = ensureQueue(t, ctx, sqsc, prefix+"noop", vt)
	ensureAllQueues(t, ctx, sqsc, prefix)
	dead = ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	return prefix, work, dead, retries
}

// noopID is the id of NOOP task i.
func noopID(i int) string { return fmt.Sprintf("task-%05d", i) }

// noopEntries encodes NOOP tasks lo..hi-1 as send entries.
func noopEntries(t *testing.T, lo, hi int) []queue.SendEntry {
	t.Helper()
	entries := make([]queue.SendEntry, 0, hi-lo)
	for i := lo; i < hi; i++ {
		body, err := task.Encode(task.New(task.TypeNoop, map[string]string{noop.KeyID: noopID(i)}), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, queue.SendEntry{Body: body})
	}
	return entries
}

// feeder sends NOOP tasks 0..n-1 to a queue while workman works, keeping
// at most window tasks sent and not yet recorded as done: the queue stays
// as shallow as a producer keeps it ("fill the queues without overfilling
// them"). moto's SQS costs O(queue depth) per send and receive, so 5,000
// tasks enqueued up front took minutes before the first was processed.
// feedWindow is how many tasks the fault tests keep outstanding: more
// than workman holds at once (workers + a batch) many times over.
const feedWindow = 500

type feeder struct {
	sent, n int
	peak    int // the most tasks outstanding (sent, not yet recorded)
	sends   int // SendMessageBatch calls
	err     error
	done    chan struct{}
}

func startFeeder(t *testing.T, ctx context.Context, q queue.Queue, n, window int, record string) *feeder {
	t.Helper()
	f := &feeder{n: n, done: make(chan struct{})}
	all := noopEntries(t, 0, n)
	go func() {
		defer close(f.done)
		for f.sent < n {
			ids, err := noop.ReadRecord(record)
			if err != nil && !os.IsNotExist(err) {
				f.err = fmt.Errorf("feeder: %w", err)
				return
			}
			done := len(complete(ids, 0).counts)
			f.peak = max(f.peak, f.sent-done)
			for f.sent < n && f.sent-done < window {
				hi := min(f.sent+queue.MaxBatch, n)
				if err := q.Send(ctx, all[f.sent:hi]...); err != nil {
					f.err = fmt.Errorf("feeder: send tasks %d..%d: %w", f.sent, hi-1, err)
					return
				}
				f.sends++
				f.sent = hi
			}
			select {
			case <-ctx.Done():
				f.err = ctx.Err()
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return f
}

// wait waits for the feeder to have sent every task and reports it.
func (f *feeder) wait(t *testing.T) {
	t.Helper()
	<-f.done
	if f.err != nil {
		t.Fatal(f.err)
	}
	t.Logf("feeder: sent %d tasks in %d batch sends, at most %d outstanding", f.sent, f.sends, f.peak)
}

// records reads the recorder file (missing = empty).
func records(t *testing.T, path string) []string {
	t.Helper()
	ids, err := noop.ReadRecord(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read record: %v", err)
	}
	return ids
}

// completion summarises a recorder file against ids 0..n-1.
type completion struct {
	lines, unique, duplicates int
	missing                   []string
	counts                    map[string]int
}

func complete(ids []string, n int) completion {
	c := completion{lines: len(ids), counts: map[string]int{}}
	for _, id := range ids {
		c.counts[id]++
	}
	for i := range n {
		switch k := c.counts[noopID(i)]; {
		case k == 0:
			c.missing = append(c.missing, noopID(i))
		default:
			c.unique++
			c.duplicates += k - 1
		}
	}
	return c
}

// logLine is one JSON log line of a Mill binary.
type logLine struct {
	Time  time.Time
	Level string
	Msg   string
	Raw   map[string]any
}

// readLog parses the slog JSON lines of path (other lines are skipped).
func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		l := logLine{Raw: m}
		l.Msg, _ = m["msg"].(string)
		l.Level, _ = m["level"].(string)
		if s, ok := m["time"].(string); ok {
			l.Time, _ = time.Parse(time.RFC3339Nano, s)
		}
		out = append(out, l)
	}
	return out
}

// countMsgs counts log lines by message, for reports.
func countMsgs(lines []logLine) string {
	m := map[string]int{}
	for _, l := range lines {
		m[l.Level+" "+l.Msg]++
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %6d  %s", m[k], k)
	}
	return b.String()
}

// tail returns the last n bytes of the file at path, for failure messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// workmanArgs are the flags every fault test gives workman: one work
// queue, its dead-letter queue, NOOP tasks only (no registry, audit table
// or database), the NOOP recorder, no HTTP server and no CloudWatch.
func workmanArgs(prefix, work, dead, record string, workers int, extra ...string) []string {
	return append([]string{
		"--queue-prefix", prefix, "--queues", work, "--dead-letter-queue", dead, "--task-types", "NOOP",
		"--workers", fmt.Sprint(workers), "--noop-record", record,
		"--http-addr", "", "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false", "--grace-period", "10s",
	}, extra...)
}

// process is a started binary whose stderr goes to a log file.
type process struct {
	*testbin.Proc
	log string
}

// start runs bin with args and env (added to this process's environment);
// stderr is appended to logPath, stdout to logPath+".out".
func start(t *testing.T, bin, logPath string, env []string, args ...string) *process {
	t.Helper()
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	of, err := os.OpenFile(logPath+".out", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close(); of.Close() }) // after the process's own cleanup
	p := testbin.Start(t, testbin.Spec{Path: bin, Args: args, Env: append(os.Environ(), env...), Stderr: lf, Stdout: of})
	return &process{Proc: p, log: logPath}
}

// newSpace opens a filesystem store at root and creates space in it.
func newSpace(t *testing.T, ctx context.Context, root, space string) *fsstore.Store {
	t.Helper()
	fs, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	return fs
}
