// Package noop is the NOOP processor: it does nothing but (optionally) sleep
// and record that it ran. Tests and benchmarks use it to exercise Workman
// without touching storage.
//
// Task properties it reads (all optional):
//
//	id     identifies the task to the Recorder
//	sleep  a Go duration ("250ms") overriding Config.Sleep for this task
//	fail   a number n: the task fails (an ordinary error, retried by
//	       Workman) while its attempts are below n
package noop

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// Property keys the processor reads.
const (
	KeyID    = "id"
	KeySleep = "sleep"
	KeyFail  = "fail"
)

// Recorder records the id of every task the processor completes.
type Recorder interface {
	Record(id string) error
}

// Config configures the processor. The zero value sleeps not at all and
// records nothing.
type Config struct {
	// Sleep is how long each task takes (default 0), unless the task's
	// sleep property says otherwise. The sleep honours ctx.
	Sleep time.Duration
	// Recorder, when set, is told the id property of each completed task
	// (after the sleep, before Handle returns nil).
	Recorder Recorder
}

// Processor is the NOOP task processor.
type Processor struct{ cfg Config }

// New returns a NOOP processor.
func New(cfg Config) *Processor { return &Processor{cfg: cfg} }

// Name is the processor's name.
func (p *Processor) Name() string { return "noop" }

// Handle sleeps and records. A malformed sleep property is a permanent error
// (retrying cannot fix it); a cancelled ctx returns ctx's error.
func (p *Processor) Handle(ctx context.Context, t *task.Task) error {
	if s := t.Get(KeyFail); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return processors.Permanent(fmt.Errorf("noop: fail property %q: not a number", s))
		}
		if t.Attempts < n {
			return fmt.Errorf("noop: failing attempt %d of the first %d, as asked", t.Attempts+1, n)
		}
	}
	d := p.cfg.Sleep
	if s := t.Get(KeySleep); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			return processors.Permanent(fmt.Errorf("noop: sleep property %q: %w", s, err))
		}
		d = v
	}
	if d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-tm.C:
		}
	} else if err := ctx.Err(); err != nil {
		return err
	}
	if p.cfg.Recorder != nil {
		if err := p.cfg.Recorder.Record(t.Get(KeyID)); err != nil {
			return fmt.Errorf("noop: record: %w", err)
		}
	}
	return nil
}

// MemoryRecorder records ids in memory. The zero value is ready to use and
// safe for concurrent use.
type MemoryRecorder struct {
	mu  sync.Mutex
	ids []string
}

// Record appends id.
func (r *MemoryRecorder) Record(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	return nil
}

// IDs returns the recorded ids in completion order.
func (r *MemoryRecorder) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// Counts returns how many times each id was recorded.
func (r *MemoryRecorder) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.ids))
	for _, id := range r.ids {
		m[id]++
	}
	return m
}

// FileRecorder appends one line per completed task to a file. Every Record
// is a single write(2) on a file opened with O_APPEND, so the line is in the
// kernel's page cache when Record returns: it survives kill -9 of the
// process (not a power loss), which is what crash tests need.
type FileRecorder struct {
	mu sync.Mutex
	f  *os.File
}

// OpenFileRecorder opens (creating if needed) path for appending.
func OpenFileRecorder(path string) (*FileRecorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("noop: open recorder: %w", err)
	}
	return &FileRecorder{f: f}, nil
}

// Record appends id and a newline.
func (r *FileRecorder) Record(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.f.Write([]byte(id + "\n"))
	return err
}

// Close closes the file.
func (r *FileRecorder) Close() error { return r.f.Close() }

// ReadRecord returns the ids recorded in the file at path, in order.
func ReadRecord(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
