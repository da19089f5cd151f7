//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
)

// TestKillWorkman kills workman with SIGKILL at random moments five times
// while it works through 5,000 NOOP tasks (fed as it goes, at most
// feedWindow outstanding), restarting it each time. Every
// task must complete at least once. A task completed more than once was
// received by a process that died before its delete: each such duplicate
// is charged to the kill of the process that first completed it, and per
// kill they must not exceed what a process can hold undeleted (see bound).
func TestKillWorkman(t *testing.T) {
	const (
		workers = 8
		kills   = 5
		vt      = 6 * time.Second // short, so killed messages come back soon
	)
	tasks := scaled(5000, 300)
	// What one process can have received and not yet deleted: a task per worker,
	// one held batch beyond them (docs/ARCHITECTURE.md, Workman), and finished
	// tasks whose batched delete has not returned — fewer than a batch buffered
	// plus up to 4 delete calls of a batch each in flight (pkg/workman deleter).
	const inFlight = workers + queue.MaxBatch
	const bound = inFlight + (queue.MaxBatch - 1) + 4*queue.MaxBatch

	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := binary(t, "workman")
	dir := t.TempDir()
	prefix, work, dead, retries := noopQueuesCounted(t, ctx, cfg, vt)
	record := filepath.Join(dir, "record")
	feed := startFeeder(t, ctx, work, tasks, feedWindow, record)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	runStart := time.Now()
	// boundaries[k] is the recorder's line count when process k was
	// killed: lines [boundaries[k-1], boundaries[k]) were written by
	// process k (a killed process writes nothing more).
	var boundaries []int
	var killedAfter []time.Duration
	var killedAt []int // distinct tasks completed at each kill
	for k := range kills + 1 {
		logPath := filepath.Join(dir, fmt.Sprintf("workman-%d.log", k))
		p := start(t, bin, logPath, nil, workmanArgs(prefix, work.Name(), dead.Name(), record, workers,
			"--noop-sleep", "10ms", "--worker-id", fmt.Sprintf("w%d", k))...)
		started := time.Now()
		if k == kills {
			// The survivor finishes the work.
			var c completion
			if !testbin.Poll(10*time.Minute, 250*time.Millisecond, func() bool {
				c = complete(records(t, record), tasks)
				return len(c.missing) == 0 || p.Exited()
			}) || len(c.missing) > 0 {
				t.Fatalf("%d of %d tasks never completed (exited: %v); log:\n%s", len(c.missing), tasks, p.Exited(), tail(logPath, 4000))
			}
			time.Sleep(2 * time.Second) // the last batched deletes
			_ = p.Cmd.Process.Signal(syscall.SIGTERM)
			if err := p.Wait(t, 30*time.Second); err != nil {
				t.Errorf("last workman after SIGTERM: %v", err)
			}
			break
		}
		// Kill at a random moment of the k-th sixth of the run, once this
		// process has completed something: the kills spread over all
		// 5,000 tasks rather than bunching at the start.
		before := len(records(t, record))
		target := int(float64(tasks) * (float64(k) + 0.2 + 0.6*rng.Float64()) / float64(kills+1))
		if !testbin.Poll(5*time.Minute, 20*time.Millisecond, func() bool {
			ids := records(t, record)
			return (len(ids) > before && len(complete(ids, 0).counts) >= target) || p.Exited()
		}) || p.Exited() {
			t.Fatalf("workman %d did not reach %d completed tasks (exited: %v); log:\n%s", k, target, p.Exited(), tail(logPath, 4000))
		}
		killedAt = append(killedAt, len(complete(records(t, record), 0).counts))
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		killedAfter = append(killedAfter, time.Since(started).Round(time.Millisecond))
		boundaries = append(boundaries, len(records(t, record)))
	}
	total := time.Since(runStart)
	feed.wait(t)

	ids := records(t, record)
	c := complete(ids, tasks)
	if len(c.missing) > 0 {
		t.Fatalf("%d tasks never completed", len(c.missing))
	}
	// Charge each duplicate to the process that first completed the task.
	perKill := make([]int, kills+1)
	firstProc := map[string]int{}
	proc := 0
	for i, id := range ids {
		for proc < len(boundaries) && i >= boundaries[proc] {
			proc++
		}
		if _, ok := firstProc[id]; !ok {
			firstProc[id] = proc
		} else {
			perKill[firstProc[id]]++
		}
	}
	maxDup, overInFlight := 0, 0
	for k := range kills {
		maxDup = max(maxDup, perKill[k])
		if perKill[k] > inFlight {
			overInFlight++
		}
		if perKill[k] > bound+retries.Count() {
			t.Errorf("kill %d: %d duplicates, more than a process can hold undeleted (%d) and the feeder's retried sends (%d)", k+1, perKill[k], bound, retries.Count())
		}
	}
	// A feeder's send the SDK retried may have queued a task twice.
	if perKill[kills] > retries.Count() {
		t.Errorf("%d duplicates of tasks first completed by the process stopped gracefully (%d sends retried)", perKill[kills], retries.Count())
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v", d, err)
	}
	if d, err := work.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("work queue after the run: %+v, %v", d, err)
	}
	t.Logf("RESULT kill-workman: %d tasks, %d workers, %d kills (at %v tasks completed; killed %v after their start); "+
		"duplicates per kill %v (max %d, %d kills above workers+batch=%d, bound %d); total duplicates %d (%.2f%%); %d completions; took %v",
		tasks, workers, kills, killedAt, killedAfter, perKill[:kills], maxDup, overInFlight, inFlight, bound,
		c.duplicates, 100*float64(c.duplicates)/float64(tasks), c.lines, total.Round(time.Second))
}
