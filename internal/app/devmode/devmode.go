// Package devmode is the embedded dev mode behind `millctl dev`
// (docs/ARCHITECTURE.md, Local development and tests): the whole mill in one
// process with no AWS, no database and no Docker.
//
// Run builds the memory dependencies of internal/wiring (memqueue queues,
// filesystem stores under a directory, in-memory audit log, content index and
// bit log, reports in a local directory), registers the same processors as
// cmd/workman, and then:
//
//  1. seeds two accounts (registry + duplication policies; one space is
//     duplicated to two destinations) and Items generated content items
//     (deterministic from Seed), written through the audited providers, so
//     AUDIT tasks flow: audit processor → dup-high → dup processor;
//  2. runs the duplication producer (looping framework, memory state and
//     lease) and an in-process workman.Manager until every queue is idle,
//     and checks every destination matches its source;
//  3. injects four faults: a sour byte in a replica, an item deleted from a
//     replica, a stale content index checksum and a missing audit entry;
//  4. runs the bit producer and the manager until idle, twice: the first
//     run finds the sour replica, the stale index entry and the missing
//     audit entry, and marks the deleted replica missing (an item missing
//     from storage is reported only when missing in two consecutive runs);
//     the second reports the deleted replica, whose BIT_ERROR restores it
//     from its source; then a second duplication sweep (nothing left to
//     copy);
//  5. verifies that every fault was detected with its expected case and
//     repaired or corrected as docs/ARCHITECTURE.md (Bit integrity) says,
//     that no other item was
//     flagged, and that nothing was dead-lettered — and prints a summary.
//
// Run returns an error explaining every expectation that was not met.
package devmode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/buildinfo"
	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
)

// devWorkerID is the dev mode's Workman instance: its logs' and its
// bit-log rows' agent.
const devWorkerID = "millctl-dev"

// Defaults of Config.
const (
	DefaultDir          = ".mill-dev"
	DefaultItems        = 300
	DefaultSeed         = 1
	DefaultWorkers      = 8
	DefaultRecheckDelay = 300 * time.Millisecond
	DefaultPhaseTimeout = 90 * time.Second
	// MinItems is the fewest items Run accepts: one per space, so every
	// fault has a target.
	MinItems = 5
)

// Config configures Run.
type Config struct {
	// Dir holds the stores, configuration and reports (default
	// DefaultDir). It is removed first unless Keep is set; with Keep, the
	// run uses a new sub-directory named after the start time instead.
	Dir  string
	Keep bool
	// Items is the number of content items seeded (default DefaultItems,
	// at least MinItems).
	Items int
	// Seed makes the content and the choice of fault targets (default
	// DefaultSeed).
	Seed uint64
	// Out receives progress lines and the summary (default os.Stdout).
	Out io.Writer
	// Logger receives the components' logs (default: discarded).
	Logger *slog.Logger
	// Workers of the manager (default DefaultWorkers).
	Workers int
	// RecheckDelay stands in for the bit check's "5 minutes" (default
	// DefaultRecheckDelay).
	RecheckDelay time.Duration
	// PhaseTimeout bounds the wait for the queues to drain in one phase
	// (default DefaultPhaseTimeout).
	PhaseTimeout time.Duration
	// Wrap, when set, wraps each processor (tests use it to break one and
	// check that the verification notices).
	Wrap func(t task.Type, h processors.Handler) processors.Handler
	// Console, when set, is a loopback address to serve the Mill Console
	// on: from the start of the run, and after it, with Workman still
	// running, until ctx ends — so a newcomer can click through a running
	// mill. OnConsole, when set, is called with the console's URL once the
	// run is over.
	Console   string
	OnConsole func(url string)
}

// consoleSampleEvery is how often the dev mode's console samples the
// queues: the run lasts seconds.
const consoleSampleEvery = 2 * time.Second

// defaultConfig holds the values withDefaults gives a Config's zero fields.
var defaultConfig = Config{
	Dir:          DefaultDir,
	Items:        DefaultItems,
	Seed:         DefaultSeed,
	Workers:      DefaultWorkers,
	RecheckDelay: DefaultRecheckDelay,
	PhaseTimeout: DefaultPhaseTimeout,
}

func (c Config) withDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Result is what a run did, for the summary and for tests.
type Result struct {
	Dir          string
	Accounts     int
	Stores       int
	Spaces       int
	Items        int   // seeded
	Bytes        int64 // seeded
	Tasks        map[task.Type]map[string]int
	Duplicated   int                // destination items matching their source after phase 2
	Policies     int                // store policies applied
	BitRunIDs    []string           // the bit producer runs, in order
	Checked      int                // items with a bit log row in a run
	Cases        map[int]int        // items by the case first found for them (1 = healthy)
	BitErrors    map[int]int        // BIT_ERROR tasks by case
	Faults       []*Fault           // injected faults and what became of them
	DeadLettered []string           // descriptions of dead-lettered tasks
	Reports      []bitlog.Report    // one per space checked per run
	ReportFiles  []string           // report files written
	ReportDir    string             // where they are
	Elapsed      time.Duration      // whole run
	Phases       []PhaseTime        // per phase
	Problems     []string           // unmet expectations ("" when all met)
	Stats        []spacestats.Group // the latest storage statistics per store
	StatsSpaces  int                // spaces counted
	// Notifications are what Mill would publish to SNS with
	// --notify-topic-arn (new spaces, bit reports with problems, producer
	// runs), in order.
	Notifications []notify.Event
	firstCase     map[string]int      // item key → first non-1 case (internal)
	bitErrorKeys  map[string][]string // item key → BIT_ERROR cases (internal)
}

// PhaseTime is how long one phase took.
type PhaseTime struct {
	Name    string
	Elapsed time.Duration
}

// Fault is one injected fault.
type Fault struct {
	Kind     string // "sour replica", "deleted replica", "stale index", "missing audit entry"
	Item     Item
	WantCase int
	// Fix says what is expected to happen to it (docs/ARCHITECTURE.md, Bit
	// integrity).
	Fix string
	// Seen is the case the mill found ("" rows: 0).
	Seen int
	// Fixed reports that the expected repair or correction was verified.
	Fixed bool
	// Note explains a failed expectation.
	Note string
}

// Item names a content item of a store.
type Item struct{ Account, Store, Space, Content string }

func (i Item) String() string { return i.Account + "/" + i.Store + "/" + i.Space + "/" + i.Content }

// Run runs the dev mode. Its error lists every unmet expectation; the
// summary is printed to Out either way (when the run got that far).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Items < MinItems {
		return nil, fmt.Errorf("devmode: --items must be at least %d (one item per space)", MinItems)
	}
	start := time.Now()
	dir, err := prepareDir(cfg.Dir, cfg.Keep, start)
	if err != nil {
		return nil, err
	}
	r := &Result{
		Dir: dir, Tasks: map[task.Type]map[string]int{}, Cases: map[int]int{}, BitErrors: map[int]int{},
		firstCase: map[string]int{}, bitErrorKeys: map[string][]string{},
	}
	e := &env{cfg: cfg, r: r, out: cfg.Out, notes: &memnotify.Notifier{}}
	err = e.run(ctx)
	r.Notifications = e.notes.Events()
	r.Elapsed = time.Since(start)
	if err != nil {
		return r, err
	}
	if !e.summarised {
		e.printSummary()
	}
	if len(r.Problems) > 0 {
		return r, fmt.Errorf("devmode: %d expectation(s) not met:\n  - %s", len(r.Problems), strings.Join(r.Problems, "\n  - "))
	}
	return r, nil
}

func prepareDir(dir string, keep bool, now time.Time) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if keep {
		abs = filepath.Join(abs, "run-"+now.UTC().Format("20060102T150405.000Z"))
	} else if err := os.RemoveAll(abs); err != nil {
		return "", fmt.Errorf("devmode: wipe %s: %w", abs, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return abs, nil
}

// env is one run's state.
type env struct {
	cfg  Config
	r    *Result
	out  io.Writer
	deps *wiring.Deps
	reg  *stores.Registry
	pols policy.Repository
	hist *historyLog
	// notes collects the notifications (snsnotify.Notifier in production).
	notes *memnotify.Notifier

	mu        sync.Mutex
	processed int

	seeded     map[string][]string // account/space → content IDs on the primary
	bitSpaces  int                 // spaces the bit producer listed, over the runs
	summarised bool                // the summary was printed (before serving the console)
}

func (e *env) printf(format string, args ...any) { fmt.Fprintf(e.out, format+"\n", args...) }

func (e *env) run(ctx context.Context) error {
	e.printf("mill dev: %s (items %d, seed %d)", e.r.Dir, e.cfg.Items, e.cfg.Seed)
	if err := e.setup(); err != nil {
		return err
	}
	mctx, stopManager := context.WithCancel(ctx)
	defer stopManager()
	m, err := e.manager()
	if err != nil {
		return err
	}
	mdone := make(chan error, 1)
	go func() { mdone <- m.Run(mctx) }()
	defer func() { stopManager(); <-mdone }()
	consoleURL := ""
	if e.cfg.Console != "" {
		if consoleURL, err = e.startConsole(mctx); err != nil {
			return err
		}
		e.printf("console: %s (watch the run; it stays up afterwards)", consoleURL)
	}

	phase := func(name string, f func() error) error {
		t0 := time.Now()
		err := f()
		e.r.Phases = append(e.r.Phases, PhaseTime{name, time.Since(t0)})
		if err != nil {
			return fmt.Errorf("devmode: %s: %w", name, err)
		}
		return nil
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"seed", func() error { return e.seed(ctx) }},
		{"duplicate", func() error { return e.duplicate(ctx) }},
		{"inject faults", func() error { return e.inject(ctx) }},
		{"bit check", func() error { return e.bitCheck(ctx) }},
		{"second bit check", func() error { return e.bitCheck(ctx) }},
		{"re-sweep", func() error { return e.resweep(ctx) }},
		{"storage statistics", func() error { return e.storageStats(ctx) }},
		{"verify", func() error { return e.verify(ctx) }},
	}
	for _, s := range steps {
		if err := phase(s.name, s.f); err != nil {
			return err
		}
	}
	if consoleURL != "" {
		e.printSummary()
		e.summarised = true
		e.printf("console: %s — Workman keeps running; Ctrl-C to stop", consoleURL)
		if e.cfg.OnConsole != nil {
			e.cfg.OnConsole(consoleURL)
		}
		<-ctx.Done()
	}
	return nil
}

// setup writes the registry and policies and builds the dependencies.
func (e *env) setup() error {
	root := e.r.Dir
	reg, err := DemoRegistry(func(acct, id string, primary bool) stores.Store {
		return stores.Store{ID: id, Primary: primary, Kind: storage.KindFS, Root: filepath.Join(root, "stores", acct+"-"+id)}
	})
	if err != nil {
		return err
	}
	e.reg = reg
	cfgDir := filepath.Join(root, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return err
	}
	b, err := e.reg.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, stores.FileName), b, 0o644); err != nil {
		return err
	}
	e.pols = policy.NewDir(cfgDir)
	ctx := context.Background()
	for _, a := range DemoStores {
		if err := e.pols.Put(ctx, a.Account, DemoPolicies()[a.Account]); err != nil {
			return err
		}
	}
	e.r.ReportDir = filepath.Join(root, "reports")
	deps, err := wiring.Memory(wiring.MemoryConfig{
		Registry: e.reg, Policies: e.pols, ReportsDir: e.r.ReportDir,
		RecheckDelay: e.cfg.RecheckDelay, Logger: e.cfg.Logger,
	})
	if err != nil {
		return err
	}
	deps.TempDir = filepath.Join(root, "tmp")
	if err := os.MkdirAll(deps.TempDir, 0o755); err != nil {
		return err
	}
	deps.Notifier = e.notes
	deps.Agent = bitlog.Agent{Instance: devWorkerID, Version: buildinfo.Version()}
	e.hist = &historyLog{Log: deps.BitLog}
	deps.BitLog = e.hist
	deps.Wrap = func(t task.Type, h processors.Handler) processors.Handler {
		h = e.count(t, h)
		if e.cfg.Wrap != nil {
			h = e.cfg.Wrap(t, h)
		}
		return h
	}
	e.deps = deps
	for _, a := range e.reg.Accounts {
		e.r.Accounts++
		e.r.Stores += len(a.Stores)
	}
	return nil
}

// count wraps a processor to count its outcomes (and BIT_ERROR cases).
func (e *env) count(t task.Type, h processors.Handler) processors.Handler {
	return processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
		err := h.Handle(ctx, tk)
		res := processors.Result(ctx, err)
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.r.Tasks[t] == nil {
			e.r.Tasks[t] = map[string]int{}
		}
		e.r.Tasks[t][res]++
		e.processed++
		if t == task.TypeBitError && err == nil {
			if be, err := task.BitErrorFrom(tk); err == nil {
				e.r.BitErrors[be.Case]++
				k := Item{be.Account, be.StoreID, be.SpaceID, be.ContentID}.String()
				e.r.bitErrorKeys[k] = append(e.r.bitErrorKeys[k], fmt.Sprint(be.Case))
			}
		}
		return err
	})
}

func (e *env) manager() (*workman.Manager, error) {
	return wiring.Workman(e.deps, wiring.WorkmanConfig{Manager: workman.Config{
		Workers: e.cfg.Workers,
		// Short waits: the dev mode's queues are in memory, so asking an
		// empty one again costs nothing, and 50 ms long polls take the
		// idle rotation round all six queues within half a second.
		ReceiveWait:     time.Millisecond,
		QueueBackoffMin: 10 * time.Millisecond, QueueBackoffMax: 200 * time.Millisecond,
		IdlePollWait: 50 * time.Millisecond,
		RetryBase:    100 * time.Millisecond, RetryMax: 2 * time.Second,
		DeleteFlush: 20 * time.Millisecond, OperationRetryBase: 10 * time.Millisecond,
		GracePeriod: 5 * time.Second, HardStopTimeout: 2 * time.Second,
		WorkerID: devWorkerID, Logger: e.cfg.Logger,
	}})
}

// waitIdle waits until every work queue is empty (nothing visible, in
// flight or delayed) on several polls in a row, printing progress.
func (e *env) waitIdle(ctx context.Context, phase string) error {
	deadline := time.Now().Add(e.cfg.PhaseTimeout)
	lastPrint := time.Now()
	quiet := 0
	for {
		depths, total, err := e.depths(ctx)
		if err != nil {
			return err
		}
		if total == 0 {
			quiet++
			if quiet >= 4 {
				e.mu.Lock()
				n := e.processed
				e.mu.Unlock()
				e.printf("  %s: queues idle, %d tasks processed so far", phase, n)
				return nil
			}
		} else {
			quiet = 0
		}
		if time.Since(lastPrint) >= 2*time.Second {
			lastPrint = time.Now()
			e.mu.Lock()
			n := e.processed
			e.mu.Unlock()
			e.printf("  %s: %d tasks processed; waiting: %s", phase, n, depths)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queues not idle after %s: %s", e.cfg.PhaseTimeout, depths)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (e *env) depths(ctx context.Context) (string, int64, error) {
	var parts []string
	var total int64
	for _, k := range queue.DefaultPriority {
		d, err := e.deps.Queues[k].Depth(ctx)
		if err != nil {
			return "", 0, err
		}
		if d.Total() > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, d.Total()))
		}
		total += d.Total()
	}
	if len(parts) == 0 {
		return "none", 0, nil
	}
	return strings.Join(parts, ", "), total, nil
}
