//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// fillStore writes n small items item-00000… into space of the filesystem
// store at root.
func fillStore(t *testing.T, root, space string, n int) {
	t.Helper()
	ctx := context.Background()
	s := newSpace(t, ctx, root, space)
	for i := range n {
		body := fmt.Sprintf("content of %s/%d", space, i)
		if _, err := s.Put(ctx, space, itemID(i), strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}
}

func readState(t *testing.T, path string) *looping.State {
	t.Helper()
	st, err := looping.NewFileStore(path).Load(context.Background())
	if err != nil {
		return nil // not yet written, or being replaced
	}
	return st
}

// received is one message a drainer took off a queue.
type received struct {
	id   string // the SQS message ID: one per send
	task *task.Task
}

// drainer receives and deletes the messages of a queue in the background
// while a producer fills it, as Workman would: the queue stays shallow
// (moto's SQS costs O(depth) per call).
type drainer struct {
	mu    sync.Mutex
	got   []received
	errs  []error
	stopc chan struct{}
	wg    sync.WaitGroup
}

func startDrainer(ctx context.Context, q queue.Queue) *drainer {
	d := &drainer{stopc: make(chan struct{})}
	for range 4 {
		d.wg.Go(func() {
			empty := 0
			for ctx.Err() == nil {
				select {
				case <-d.stopc:
					if empty >= 2 {
						return
					}
				default:
					empty = 0 // only empties after stop count
				}
				msgs, err := q.Receive(ctx, queue.MaxBatch, time.Second)
				if err != nil {
					d.fail(fmt.Errorf("drain: receive: %w", err))
					return
				}
				if len(msgs) == 0 {
					empty++
					continue
				}
				empty = 0
				for _, m := range msgs {
					tk, err := task.Decode(m.Body)
					if err != nil {
						d.fail(fmt.Errorf("drain: decode message %s: %w", m.ID, err))
						continue
					}
					d.mu.Lock()
					d.got = append(d.got, received{m.ID, tk})
					d.mu.Unlock()
				}
				if err := q.Delete(ctx, msgs...); err != nil {
					d.fail(fmt.Errorf("drain: delete: %w", err))
				}
			}
		})
	}
	return d
}

// count is the number of distinct messages received so far.
func (d *drainer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := make(map[string]bool, len(d.got))
	for _, m := range d.got {
		seen[m.id] = true
	}
	return len(seen)
}

func (d *drainer) fail(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
}

// stop waits until the queue answers empty twice to each receiver and
// returns every message received.
func (d *drainer) stop(t *testing.T) []received {
	t.Helper()
	close(d.stopc)
	d.wg.Wait()
	for _, err := range d.errs {
		t.Error(err)
	}
	return d.got
}

// perItem counts the distinct messages (sends) per key, and how many
// deliveries repeated a message already received: the emulator hands the
// same message to two concurrent receives now and then, which is SQS's
// at-least-once delivery, not a second send.
func perItem(msgs []received, key func(*task.Task) string) (sends map[string]int, redelivered int) {
	sends = map[string]int{}
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.id] {
			redelivered++
			continue
		}
		seen[m.id] = true
		sends[key(m.task)]++
	}
	return sends, redelivered
}

// TestProducerKilledAndRestarted kills dupproducer with SIGKILL in the
// middle of a run over a few thousand items, once a task of the bite in
// progress is on the queue (its batches in flight), and starts it again
// until the run is done: every source item must have a DUP task, the run
// must resume (same run, no second listing from scratch), and the only
// items sent twice are those of the bite in progress at the kill.
func TestProducerKilledAndRestarted(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := binary(t, "dupproducer")
	dir := t.TempDir()
	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	dupLow := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDupLow), time.Minute)
	ddb := cfg.DynamoDB()
	leaseTable := prefix + "leases"
	testenv.CleanupTable(t, ddb, leaseTable)
	if _, err := ddb.CreateTable(ctx, dynamolease.CreateTableInput(leaseTable)); err != nil {
		t.Fatal(err)
	}

	const (
		biteSize = 100
		maxQueue = 1000 // a full queue ends an invocation; the next resumes
	)
	sizes := map[string]int{"alpha": scaled(2000, 300), "beta": scaled(1000, 150)}
	src, dst := filepath.Join(dir, "store-1"), filepath.Join(dir, "store-2")
	fillStart := time.Now()
	for space, n := range sizes {
		fillStore(t, src, space, n)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %v source items in %v", sizes, time.Since(fillStart).Round(time.Millisecond))
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(conf, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]}]}`, src, dst))
	writeFile(t, filepath.Join(conf, "duplication-accounts.json"), `["acme"]`)
	writeFile(t, filepath.Join(conf, "acme-duplication-policy.json"), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	state := filepath.Join(dir, "state.json")
	env := []string{"MILL_CONFIG_DIR=" + conf, "MILL_QUEUE_PREFIX=" + prefix, "MILL_STATE=" + state,
		"MILL_LEASE_TABLE=" + leaseTable, "MILL_LEASE_TTL=3s", "MILL_PROGRESS=log",
		fmt.Sprintf("MILL_BITE_SIZE=%d", biteSize), fmt.Sprintf("MILL_MAX_QUEUE_SIZE=%d", maxQueue)}

	drained := startDrainer(ctx, dupLow)
	runStart := time.Now()
	first := start(t, bin, filepath.Join(dir, "dupproducer-0.log"), env)
	// Kill at a random bite past the first save.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	total := sizes["alpha"] + sizes["beta"]
	killBite := int64(2 + rng.IntN(max(1, total/biteSize/2)))
	var mid *looping.State
	if !testbin.Poll(5*time.Minute, 5*time.Millisecond, func() bool {
		if st := readState(t, state); st != nil && st.InRun() && st.Bites >= killBite {
			mid = st
			return true
		}
		return first.Exited()
	}) || mid == nil {
		t.Fatalf("no kill point reached (bite %d; exited: %v); log:\n%s", killBite, first.Exited(), tail(first.log, 4000))
	}
	// Then kill once the queue holds more tasks than the last save counts
	// (drained, then still on the queue: an undercount at worst), i.e.
	// with batches of the bite in progress acknowledged. The bite may end,
	// be saved and the next begin before the signal lands: the state read
	// after the kill names the bite in progress either way.
	landed := testbin.Poll(20*time.Second, 20*time.Millisecond, func() bool {
		st := readState(t, state)
		if first.Exited() || st == nil {
			return first.Exited()
		}
		got := int64(drained.count())
		d, err := dupLow.Depth(ctx)
		return err == nil && got+d.Total() > st.Queued.Total()
	})
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v (the run ended before the kill point)", err)
	}
	<-first.Done()
	killedAt := time.Now()
	mid = readState(t, state) // what the killed process saved last
	t.Logf("killed dupproducer at bite %d after %v: %d tasks queued by the saved state, cursor %d; tasks past the save on the queue before the kill: %v",
		mid.Bites, killedAt.Sub(runStart).Round(time.Millisecond), mid.Queued.Total(), mid.Cursor, landed)

	// Restart until the run is done: the first restarts meet the dead
	// process's lease until it expires (3 s), and exit 0 naming it.
	var leaseHeld, queueFull, invocations int
	var final *looping.State
	var doneAt time.Time
	for attempt := 1; ; attempt++ {
		if time.Since(killedAt) > 5*time.Minute {
			t.Fatal("the run did not complete within 5 minutes of the kill")
		}
		logPath := filepath.Join(dir, fmt.Sprintf("dupproducer-%d.log", attempt))
		p := start(t, bin, logPath, env)
		if err := p.Wait(t, 5*time.Minute); err != nil {
			t.Fatalf("restart %d: %v; log:\n%s", attempt, err, tail(logPath, 4000))
		}
		invocations++
		out, _ := os.ReadFile(logPath + ".out")
		if strings.Contains(string(out), "lease held") {
			leaseHeld++
			if !strings.Contains(string(out), fmt.Sprintf("pid %d", first.Cmd.Process.Pid)) {
				t.Errorf("restart %d met a lease not held by the killed process:\n%s", attempt, out)
			}
			time.Sleep(time.Second)
			continue
		}
		if strings.Contains(string(out), "queue full") {
			queueFull++
			time.Sleep(time.Second)
			continue
		}
		final = readState(t, state)
		if final == nil || final.InRun() {
			t.Fatalf("restart %d ended with the run still in progress:\n%s\nlog:\n%s", attempt, out, tail(logPath, 4000))
		}
		t.Logf("restart %d: %s", attempt, strings.TrimSpace(string(out)))
		doneAt = time.Now()
		break
	}
	if !final.LastRunStart.Equal(mid.CurrentRunStart) {
		t.Errorf("the completed run started at %v, the killed one at %v: the run was not resumed", final.LastRunStart, mid.CurrentRunStart)
	}

	tasks := drained.stop(t)
	sent, redelivered := perItem(tasks, func(tk *task.Task) string {
		d, err := task.DupFrom(tk)
		if err != nil {
			t.Fatalf("not a DUP task: %v", err)
		}
		return d.SpaceID + "/" + d.ContentID // "space/": the space-level task
	})
	missing, dups := 0, 0
	for space, n := range sizes {
		for i := range n {
			switch c := sent[space+"/"+itemID(i)]; {
			case c == 0:
				missing++
				if missing <= 5 {
					t.Errorf("%s/%s got no DUP task", space, itemID(i))
				}
			case c > 1:
				dups += c - 1
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d items skipped", missing, total)
	}
	if dups > biteSize {
		t.Errorf("%d items queued twice, more than one bite (%d)", dups, biteSize)
	}
	// The re-sent items are those of the batches in flight at the kill: the
	// bite after the dead process's last save, and no other item.
	inFlight := nextBite(t, mid, sizes, biteSize)
	outside := 0
	for key, c := range sent {
		if c > 1 && !inFlight[key] {
			if outside++; outside <= 5 {
				t.Errorf("%s queued %d times, outside the bite in progress at the kill (after %s)", key, c, describeNext(mid))
			}
		}
	}
	if outside > 0 {
		t.Errorf("%d items queued twice outside the bite in progress at the kill", outside)
	}
	t.Logf("RESULT producer-kill: %d items in 2 spaces, bite %d, killed at bite %d; %d restarts (%d met the dead holder's lease, %d stopped on a full queue) "+
		"resumed run %s; %d messages drained (%d redeliveries), %d items re-sent, none skipped=%v; run done %v after the kill, %v after its start",
		total, biteSize, mid.Bites, invocations, leaseHeld, queueFull, final.RunID, len(tasks), redelivered, dups, missing == 0,
		doneAt.Sub(killedAt).Round(time.Second), doneAt.Sub(runStart).Round(time.Second))
}

// TestTwoProducersStartedTogether starts two bitproducers of the same kind
// at once: exactly one runs, the other exits 0 naming the holder.
func TestTwoProducersStartedTogether(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin := binary(t, "bitproducer")
	dir := t.TempDir()
	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	bitQ := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyBit), time.Minute)
	ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyBitReport), time.Minute)
	ddb := cfg.DynamoDB()
	leaseTable := prefix + "leases"
	testenv.CleanupTable(t, ddb, leaseTable)
	if _, err := ddb.CreateTable(ctx, dynamolease.CreateTableInput(leaseTable)); err != nil {
		t.Fatal(err)
	}
	// The bit log, where the producer records its run.
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "store")
	items := scaled(1000, 300)
	fillStore(t, root, "photos", items)
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(conf, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, root))

	type result struct {
		p   *process
		out string
	}
	var ps [2]*process
	drained := startDrainer(ctx, bitQ)
	begin := time.Now()
	for i := range ps {
		// Each its own state file: the lease alone must keep them apart.
		env := []string{"MILL_CONFIG_DIR=" + conf, "MILL_QUEUE_PREFIX=" + prefix, "MILL_DATABASE_URL=" + dbURL,
			"MILL_STATE=" + filepath.Join(dir, fmt.Sprintf("state-%d.json", i)),
			"MILL_LEASE_TABLE=" + leaseTable, "MILL_PROGRESS=log", "MILL_BITE_SIZE=20"}
		ps[i] = start(t, bin, filepath.Join(dir, fmt.Sprintf("bitproducer-%d.log", i)), env)
	}
	var res [2]result
	for i, p := range ps {
		if err := p.Wait(t, 5*time.Minute); err != nil {
			t.Errorf("bitproducer %d (pid %d) exit: %v; log:\n%s", i, p.Cmd.Process.Pid, err, tail(p.log, 3000))
		}
		out, _ := os.ReadFile(p.log + ".out")
		res[i] = result{p, string(out)}
	}
	took := time.Since(begin)
	var runner, waiter = -1, -1
	for i, r := range res {
		if strings.Contains(r.out, "lease held") {
			waiter = i
		} else {
			runner = i
		}
	}
	if runner < 0 || waiter < 0 {
		t.Fatalf("want exactly one run and one lease-held exit; outputs:\n0: %s\n1: %s", res[0].out, res[1].out)
	}
	holder := fmt.Sprintf("pid %d", res[runner].p.Cmd.Process.Pid)
	if !strings.Contains(res[waiter].out, holder) {
		t.Errorf("the waiting invocation did not name the holder (%s):\n%s", holder, res[waiter].out)
	}
	if !strings.Contains(res[runner].out, "done") {
		t.Errorf("the running invocation did not finish its run:\n%s", res[runner].out)
	}
	if st := readState(t, filepath.Join(dir, fmt.Sprintf("state-%d.json", waiter))); st != nil {
		t.Errorf("the waiting invocation wrote state: %+v", st)
	}
	tasks := drained.stop(t)
	sends, redelivered := perItem(tasks, func(tk *task.Task) string { return tk.Get(task.KeyContentID) })
	// Two runs would send every item twice. Counting distinct message IDs
	// (sends) per item separates that from the emulator's occasional
	// second delivery of one message to concurrent receives.
	twice := 0
	for _, n := range sends {
		twice += n - 1
	}
	if len(sends) != items || twice != 0 {
		t.Errorf("bit queue: %d sends for %d distinct items (%d items sent more than once), want each of %d items sent exactly once (one producer ran)", len(tasks)-redelivered, len(sends), twice, items)
	}
	t.Logf("RESULT two-producers: %d items, each sent once (%d redeliveries of a message to concurrent receives); runner pid %d: %q; other pid %d: %q; both exited 0 within %v",
		items, redelivered, res[runner].p.Cmd.Process.Pid, strings.TrimSpace(firstLine(res[runner].out)),
		res[waiter].p.Cmd.Process.Pid, strings.TrimSpace(firstLine(res[waiter].out)), took.Round(time.Millisecond))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// nextBite is the set of "space/item" keys of the bite the producer takes
// after the saved state st: the first morsel from st.Cursor not yet done,
// its delete step when that is not done (the space-level task, keyed
// "space/"), else the biteSize items after its marker. The dup producer's
// morsel IDs are "account/space/policy" and its items are listed in order.
func nextBite(t *testing.T, st *looping.State, sizes map[string]int, biteSize int) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	m := nextMorsel(st)
	if m == nil {
		return out
	}
	parts := strings.Split(m.ID, "/")
	if len(parts) < 3 {
		t.Fatalf("morsel ID %q is not account/space/policy", m.ID)
	}
	space := parts[1]
	if !m.DeletesDone {
		// The delete step's first bite: the space-level task alone (the
		// destination is empty).
		out[space+"/"] = true
		return out
	}
	for i := 0; i < sizes[space] && len(out) < biteSize; i++ {
		if id := itemID(i); id > m.Marker {
			out[space+"/"+id] = true
		}
	}
	return out
}

// nextMorsel is the morsel whose bite follows the saved state st, or nil.
func nextMorsel(st *looping.State) *looping.Morsel {
	for k := range st.Morsels {
		if m := &st.Morsels[(st.Cursor+k)%len(st.Morsels)]; !m.Done {
			return m
		}
	}
	return nil
}

func describeNext(st *looping.State) string {
	if m := nextMorsel(st); m != nil {
		return fmt.Sprintf("morsel %s, marker %q", m.ID, m.Marker)
	}
	return "no morsel left"
}
