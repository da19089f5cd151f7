package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/reqcount"
	"github.com/millfleet/mill/internal/testkit/sqsfair"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/noop"
)

// The fairness acceptance figures: A's backlog queued before B's tasks,
// and how many of A's may finish before B's last one does. Workman runs
// fairWorkers tasks of fairSleep each at once: SQS flags a tenant as
// noisy only with at least 30 of its messages in flight ("How Amazon SQS
// fair queues work": the consumers must hold enough at once for one
// tenant's share to stand out), which instant NOOPs would not reach on
// AWS.
const (
	fairA, fairB = 10000, 100
	fairBound    = 2000
	fairWorkers  = 64
	fairSleep    = 100 * time.Millisecond
)

// realSQSEndpoint is SQS in the one region the tests run in on real AWS.
const realSQSEndpoint = "https://sqs." + testenv.RealAWSRegion + ".amazonaws.com"

// fairSQS is where a fairness run sends: the SQS endpoint behind a
// request-counting proxy that records every SendMessageBatch entry, a
// client through the proxy, and the children's environment.
type fairSQS struct {
	client *sqs.Client
	env    []string
	mu     sync.Mutex
	sent   []sentEntry
	counts *reqcount.Counter
}

type sentEntry struct{ group, body string }

// newFairSQS puts the proxy in front of the SQS the environment names: a
// real SQS standard queue (fair queues are how SQS delivers one whose
// messages carry a MessageGroupId) when MILL_TEST_REAL_AWS is set, else
// the fair-queue stand-in (internal/testkit/sqsfair: the emulators have
// no fair queues) in fair mode or, with fair false, in send order. The
// children reach every other service where the environment says (the
// emulator, or AWS).
func newFairSQS(t *testing.T, fair bool) *fairSQS {
	t.Helper()
	cfg := testenv.AWS(t)
	upstream := realSQSEndpoint
	if !testenv.RealAWS() {
		srv := sqsfair.New(sqsfair.Options{Fair: fair})
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		upstream = srv.URL()
	}
	f := &fairSQS{counts: reqcount.Start(t, upstream)}
	f.counts.Observe(f.observe)
	f.client = cfg.SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(f.counts.URL()) })
	f.env = testbin.Env("AWS_ENDPOINT_URL_SQS=" + f.counts.URL())
	return f
}

func (f *fairSQS) observe(name string, body []byte) {
	if name != "sqs SendMessageBatch" {
		return
	}
	var in struct {
		Entries []struct {
			MessageBody    string
			MessageGroupId *string
		}
	}
	_ = json.Unmarshal(body, &in)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range in.Entries {
		f.sent = append(f.sent, sentEntry{group: aws.ToString(e.MessageGroupId), body: e.MessageBody})
	}
}

// fairRun queues fairA NOOP tasks of account A, then fairB of account B,
// on one queue with the real producer-side sender (millctl enqueue),
// checks at the proxy that every entry went out with its account as
// MessageGroupId, runs the real Workman (each task taking sleep) until
// all have finished and returns how many of A's had finished when B's
// last one did.
func fairRun(t *testing.T, f *fairSQS, sleep time.Duration) int {
	t.Helper()
	ctx := context.Background()
	bins := testbin.Build(t, "millctl", "workman")
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, f.client, prefix)
	for _, k := range queue.AllKeys { // Workman opens every queue it may send to
		if _, err := (setup.Queue{Client: f.client, QueueName: queue.Name(prefix, k), VisibilityTimeout: time.Minute}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	env := append(f.env, "MILL_QUEUE_PREFIX="+prefix)
	start := time.Now()
	for _, acct := range []struct {
		id string
		n  int
	}{{"acct-a", fairA}, {"acct-b", fairB}} {
		c := testbin.Run(t, 3*time.Minute, testbin.Spec{Path: bins["millctl"], Env: env, Args: []string{"enqueue", "--type", "NOOP",
			"--prop", "account=" + acct.id, "--prop", "id=" + acct.id, "--count", fmt.Sprint(acct.n), "--queue", queue.KeyBit}})
		if err := c.Err(); err != nil {
			t.Fatalf("millctl enqueue %s: %v\n%s", acct.id, err, c.Output())
		}
	}
	t.Logf("enqueued %d + %d in %v", fairA, fairB, time.Since(start).Round(time.Millisecond))
	f.checkSent(t)

	record := filepath.Join(t.TempDir(), "noop.record")
	start = time.Now()
	w := testbin.Start(t, testbin.Spec{Path: bins["workman"], Env: env, Args: []string{"--queues", queue.KeyBit, "--task-types", "NOOP",
		"--workers", fmt.Sprint(fairWorkers), "--noop-sleep", sleep.String(), "--max-attempts", "3", "--http-addr", "", "--cloudwatch=false", "--fleet-table", "",
		"--instance-metadata=false", "--worker-id", "fairness", "--receive-wait", "1s", "--long-poll-wait", "1s",
		"--grace-period", "5s", "--noop-record", record}})
	var done []string
	testbin.WaitFor(t, 3*time.Minute, "every task to finish", func() bool {
		select {
		case <-w.Done():
			t.Fatalf("workman exited: %v\n%s", w.Err(), testbin.CutLines(w.Output(), 40))
		default:
		}
		done = firstFinishes(t, record)
		return len(done) == fairA+fairB
	})
	t.Logf("ran %d tasks in %v; requests %v", len(done), time.Since(start).Round(time.Millisecond), f.counts.Take())
	return aBeforeLastB(t, done)
}

// checkSent: every task went out once, with its account as MessageGroupId.
func (f *fairSQS) checkSent(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) != fairA+fairB {
		t.Fatalf("%d SendMessageBatch entries at the proxy, want %d", len(f.sent), fairA+fairB)
	}
	for _, e := range f.sent {
		tk, err := task.Decode([]byte(e.body))
		if err != nil || e.group == "" || e.group != tk.Get(task.KeyAccount) {
			t.Fatalf("sent MessageGroupId %q with body %.80s (%v)", e.group, e.body, err)
		}
	}
}

// firstFinishes is the ids Workman recorded, each once, in the order they
// first finished (delivery is at least once).
func firstFinishes(t *testing.T, record string) []string {
	ids, err := noop.ReadRecord(record)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// aBeforeLastB counts A's tasks finished before B's last one.
func aBeforeLastB(t *testing.T, done []string) int {
	t.Helper()
	a, b, at := 0, 0, -1
	for _, id := range done {
		switch {
		case strings.HasPrefix(id, "acct-b-"):
			if b++; b == fairB {
				at = a
			}
		case strings.HasPrefix(id, "acct-a-"):
			a++
		default:
			t.Fatalf("recorded id %q is no task of this run", id)
		}
	}
	if a != fairA || b != fairB {
		t.Fatalf("finished %d of A's and %d of B's, want %d and %d", a, b, fairA, fairB)
	}
	return at
}

// TestFairnessAcceptance: with 10,000 NOOP tasks of account A queued
// before 100 of account B on one queue by millctl enqueue, the real
// Workman (its round robin across accounts in a batch) finishes all of
// B's before A's 2,000th. The queue is an SQS fair queue: the stand-in
// under `make test`, a real SQS standard queue under `make test/aws`.
func TestFairnessAcceptance(t *testing.T) {
	at := fairRun(t, newFairSQS(t, true), fairSleep)
	t.Logf("fair queue: B's last task finished after %d of A's", at)
	if at >= fairBound {
		t.Errorf("B's last task finished after %d of A's, want fewer than %d", at, fairBound)
	}
}

// TestFairnessBaselineSendOrder: the same run on the stand-in delivering
// in send order (what the emulators do) finishes B's tasks only after
// nearly all of A's, so it is the fair queue, not the test, that puts B
// first. Stand-in only: a real standard queue cannot be made unfair. Its
// tasks take no time: in send order what Workman holds does not matter.
func TestFairnessBaselineSendOrder(t *testing.T) {
	if testenv.RealAWS() {
		t.Fatal("the send-order baseline runs on the stand-in only (scripts/test-aws.sh runs TestFairnessAcceptance)")
	}
	at := fairRun(t, newFairSQS(t, false), 0)
	t.Logf("send order: B's last task finished after %d of A's", at)
	// Workman holds a few batches per worker ahead; A's last ones may
	// finish after B's.
	if at < fairA-10*fairWorkers {
		t.Errorf("send order: B's last task finished after %d of A's, want nearly all %d", at, fairA)
	}
}
