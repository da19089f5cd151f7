package looping_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// Environment of the child process TestKillMidRun starts.
const (
	killDirEnv   = "MILL_LOOPING_KILL_DIR"
	killBiteEnv  = "MILL_LOOPING_KILL_BITE"
	killAfterEnv = "MILL_LOOPING_KILL_AFTER"
	// killEntriesEnv, when set, is the child's journal entry limit (small:
	// the kill lands among compactions).
	killEntriesEnv = "MILL_LOOPING_KILL_ENTRIES"
)

var killSizes = map[string]int{"A": 730, "B": 1200, "C": 95}

// journalQueue records every sent body in a file, synced before Send
// returns: what it holds is what a real queue would have accepted before
// the process died.
type journalQueue struct {
	queue.Queue
	mu sync.Mutex
	f  *os.File
}

func (j *journalQueue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	if err := j.Queue.Send(ctx, entries...); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	w := bufio.NewWriter(j.f)
	for _, e := range entries {
		tk, err := task.Decode(e.Body)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s/%s\n", tk.Get(task.KeySpaceID), tk.Get(task.KeyContentID))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return j.f.Sync()
}

// TestKillMidRun kills a producer process with SIGKILL in the middle of a
// run — no deferred saves, no lease release — and checks that a new
// process resuming from the state file queues every item at least once.
func TestKillMidRun(t *testing.T) {
	if dir := os.Getenv(killDirEnv); dir != "" {
		killChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct{ bite, after, entries int }{
		{1, 0, 0},   // before the first bite sent anything
		{5, 37, 0},  // mid-bite
		{9, 100, 0}, // after a whole bite was sent, before its state was saved
		{8, 50, 2},  // mid-bite, the journal compacted every third save
		{11, 0, 3},  // at a bite's start, among compactions
	} {
		t.Run(fmt.Sprintf("bite%d_after%d_entries%d", tc.bite, tc.after, tc.entries), func(t *testing.T) {
			dir := t.TempDir()
			cmd := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: os.Args[0], Args: []string{"-test.run=^TestKillMidRun$", "-test.count=1"},
				Env: append(os.Environ(), killDirEnv+"="+dir,
					killBiteEnv+"="+strconv.Itoa(tc.bite), killAfterEnv+"="+strconv.Itoa(tc.after),
					killEntriesEnv+"="+strconv.Itoa(tc.entries))})
			out, err := cmd.Output(), cmd.Err()
			if err == nil {
				t.Fatalf("child was not killed:\n%s", out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("child: %v\n%s", err, out)
			}
			sent := map[string]int{}
			if f, err := os.Open(filepath.Join(dir, "sent.log")); err == nil {
				sc := bufio.NewScanner(f)
				for sc.Scan() {
					sent[sc.Text()]++
				}
				f.Close()
			}
			childSent := 0
			for _, n := range sent {
				childSent += n
			}
			// Resume in this process from the state file the child left.
			e := newEnv(t)
			p := newFake([]string{"A", "B", "C"}, killSizes, nil)
			cfg := e.config(t, p)
			cfg.BiteSize = 100
			cfg.State = looping.NewFileStore(filepath.Join(dir, "state.json"))
			sum, err := mustNew(t, cfg).Run(context.Background())
			if err != nil || sum.Stopped != looping.StopDone {
				t.Fatalf("resume: %v %v", sum, err)
			}
			if tc.bite > 1 && p.morsels != 0 {
				t.Error("resume listed the morsels again instead of resuming")
			}
			for _, tk := range drain(t, e.q) {
				sent[tk.Get(task.KeySpaceID)+"/"+tk.Get(task.KeyContentID)]++
			}
			dups := 0
			for id, n := range killSizes {
				for i := 1; i <= n; i++ {
					switch c := sent[id+"/"+itemName(i)]; {
					case c == 0:
						t.Errorf("%s/%s was never queued", id, itemName(i))
					case c > 1:
						dups += c - 1
					}
				}
			}
			if dups > cfg.BiteSize {
				t.Errorf("%d items queued twice, more than one bite", dups)
			}
			t.Logf("child sent %d tasks before the kill; %d duplicates after resuming", childSent, dups)
		})
	}
}

// killChild runs a producer that SIGKILLs its own process at the
// configured bite after sending the configured number of tasks.
func killChild(t *testing.T, dir string) {
	bite, _ := strconv.Atoi(os.Getenv(killBiteEnv))
	after, _ := strconv.Atoi(os.Getenv(killAfterEnv))
	if n, _ := strconv.Atoi(os.Getenv(killEntriesEnv)); n > 0 {
		defer looping.SetMaxEntries(n)()
	}
	f, err := os.OpenFile(filepath.Join(dir, "sent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	p := newFake([]string{"A", "B", "C"}, killSizes, nil)
	cfg := e.config(t, p)
	cfg.BiteSize = 100
	cfg.Queue = &journalQueue{Queue: memqueue.New("dup-low", memqueue.Config{Clock: e.clk}), f: f}
	cfg.State = looping.NewFileStore(filepath.Join(dir, "state.json"))
	p.onBite = func(ctx context.Context, m looping.Morsel) error {
		if p.bites != bite {
			return nil
		}
		// Send `after` tasks of this bite through the real path, then die.
		start := 0
		fmt.Sscanf(m.Marker, "item-%d", &start)
		var ts []*task.Task
		for i := start + 1; i <= min(start+after, killSizes[m.ID]); i++ {
			ts = append(ts, p.task(m, itemName(i), "copy"))
		}
		if err := cfg.Queue.Send(ctx, encodeAll(t, ts)...); err != nil {
			t.Fatal(err)
		}
		proc, _ := os.FindProcess(os.Getpid())
		_ = proc.Kill() // SIGKILL on Unix: no defers, no cleanup
		select {}
	}
	_, err = mustNew(t, cfg).Run(context.Background())
	t.Fatalf("child finished its run without being killed: %v", err)
}

func encodeAll(t *testing.T, ts []*task.Task) []queue.SendEntry {
	var out []queue.SendEntry
	for _, tk := range ts {
		b, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, queue.SendEntry{Body: b})
	}
	return out
}
