//go:build faults

package faults

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// sample is the recorder's line count at a moment.
type sample struct {
	at    time.Time
	count int
}

// sampler polls the recorder file every 100 ms.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(t *testing.T, path string) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			n := len(records(t, path))
			s.mu.Lock()
			s.samples = append(s.samples, sample{time.Now(), n})
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return s
}

func (s *sampler) close() { close(s.stop); <-s.done }

// firstAbove is the first sample after `after` whose count exceeds n.
func (s *sampler) firstAbove(after time.Time, n int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.samples {
		if x.at.After(after) && x.count > n {
			return x.at, true
		}
	}
	return time.Time{}, false
}

func (s *sampler) last() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return 0
	}
	return s.samples[len(s.samples)-1].count
}

// TestSQSOutage: workman talks to the emulator through a fault proxy;
// while it works through 2,000 NOOP tasks the proxy is cut (every
// connection reset, new ones refused) for 30 s, then restored. Workman
// must log the errors, back off, recover by itself and complete every task.
func TestSQSOutage(t *testing.T) {
	const (
		workers = 8
		outage  = 30 * time.Second
	)
	tasks := scaled(2000, 200)
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	bin := binary(t, "workman")
	dir := t.TempDir()
	prefix, work, dead := noopQueues(t, ctx, cfg, 20*time.Second)
	u, err := url.Parse(testenv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	record := filepath.Join(dir, "record")
	logPath := filepath.Join(dir, "workman.log")
	runStart := time.Now()
	// The feeder talks to the emulator directly, not through the proxy:
	// the producers are not part of the outage.
	feed := startFeeder(t, ctx, work, tasks, feedWindow, record)
	wm := start(t, bin, logPath, []string{"AWS_ENDPOINT_URL=" + proxy.URL()},
		workmanArgs(prefix, work.Name(), dead.Name(), record, workers, "--noop-sleep", "20ms")...)
	smp := startSampler(t, record)
	defer smp.close()

	// Cut once a fifth of the tasks are done.
	if !testbin.Poll(2*time.Minute, 50*time.Millisecond, func() bool { return smp.last() >= tasks/5 || wm.Exited() }) || wm.Exited() {
		t.Fatalf("workman did not reach %d tasks (exited: %v); log:\n%s", tasks/5, wm.Exited(), tail(logPath, 4000))
	}
	cutAt := time.Now()
	proxy.Cut()
	atCut := len(records(t, record))
	t.Logf("proxy cut after %v with %d tasks recorded", cutAt.Sub(runStart).Round(time.Millisecond), atCut)
	time.Sleep(outage)
	atRestore := len(records(t, record))
	restoreAt := time.Now()
	proxy.Restore()
	t.Logf("proxy restored after %v; %d tasks recorded meanwhile (those running or held at the cut)", restoreAt.Sub(cutAt).Round(time.Millisecond), atRestore-atCut)
	if wm.Exited() {
		t.Fatalf("workman exited during the outage: %v; log:\n%s", wm.Err(), tail(logPath, 4000))
	}

	// The rest should go at least at a third of the rate before the cut
	// (plus the backoff and the redelivery of messages whose deletes
	// failed during the outage).
	rate := float64(atCut) / cutAt.Sub(runStart).Seconds()
	budget := 90*time.Second + time.Duration(3*float64(tasks-atCut)/rate*float64(time.Second))
	t.Logf("rate before the cut %.1f tasks/s; completion budget %v", rate, budget.Round(time.Second))
	var c completion
	if !testbin.Poll(budget, 200*time.Millisecond, func() bool {
		c = complete(records(t, record), tasks)
		return len(c.missing) == 0
	}) {
		t.Fatalf("%d of %d tasks never completed (first: %v); log:\n%s", len(c.missing), tasks, c.missing[:min(5, len(c.missing))], tail(logPath, 4000))
	}
	allDone := time.Now()
	feed.wait(t)
	firstAfter, ok := smp.firstAbove(restoreAt, atRestore)
	if !ok {
		t.Fatal("no progress observed after the restore")
	}
	// Let the last deletes go (flushed within 1 s), then stop gracefully.
	time.Sleep(2 * time.Second)
	if err := wm.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := wm.Wait(t, 30*time.Second); err != nil {
		t.Fatalf("workman exit after SIGTERM: %v", err)
	}

	// The log: receive errors during the outage, then tasks done after it.
	lines := readLog(t, logPath)
	var recvFailed, deleteFailed, doneBefore, doneAfter int
	var lastRecvFailed time.Time
	for _, l := range lines {
		switch {
		case l.Msg == "receive failed":
			if l.Time.Before(cutAt.Add(-time.Second)) || l.Time.After(restoreAt.Add(5*time.Second)) {
				t.Errorf("receive failed outside the outage at %v: %v", l.Time, l.Raw)
			}
			if l.Raw["error"] == nil || l.Raw["retry_in"] == nil {
				t.Errorf("receive failed line lacks error or retry_in: %v", l.Raw)
			}
			recvFailed++
			lastRecvFailed = l.Time
			t.Logf("logged %v after the cut: receive failed: error=%v retry_in=%v", l.Time.Sub(cutAt).Round(time.Millisecond), l.Raw["error"], l.Raw["retry_in"])
		case l.Msg == "delete failed; the message will be redelivered" || l.Msg == "delete failed for some entries; retrying them":
			deleteFailed++
		case l.Msg == "task done" && l.Time.Before(cutAt):
			doneBefore++
		case l.Msg == "task done" && l.Time.After(restoreAt):
			doneAfter++
		}
	}
	if recvFailed == 0 {
		t.Error("workman logged no receive failure during the outage")
	}
	if doneBefore == 0 || doneAfter == 0 {
		t.Errorf("task done lines: %d before the cut, %d after the restore; want both > 0", doneBefore, doneAfter)
	}
	if !lastRecvFailed.IsZero() && lastRecvFailed.After(firstAfter) {
		t.Errorf("receive failures went on after progress resumed (%v > %v)", lastRecvFailed, firstAfter)
	}
	d, err := dead.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Total() != 0 {
		t.Errorf("dead-letter queue holds %d messages", d.Total())
	}
	if d, err := work.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("work queue after the run: %+v, %v", d, err)
	}
	t.Logf("RESULT sqs-outage: %d tasks, outage %v, all completed %v after the restore, first progress %v after the restore; "+
		"%d receive failures logged (last %v after the cut), %d delete-failure lines, %d duplicate completions; total %v; proxy %+v",
		tasks, outage, allDone.Sub(restoreAt).Round(time.Millisecond), firstAfter.Sub(restoreAt).Round(100*time.Millisecond),
		recvFailed, lastRecvFailed.Sub(cutAt).Round(time.Millisecond), deleteFailed, c.duplicates,
		time.Since(runStart).Round(time.Second), proxy.Stats())
	t.Logf("workman log by message:%s", countMsgs(lines))
	_ = os.Remove(record)
}
