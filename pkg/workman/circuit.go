package workman

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/task"
)

// Probe asks whether a dependency answers again (a ping of the database, a
// describe of the table): nil when it does.
type Probe func(ctx context.Context) error

// Outage is a dependency whose circuit is open on this manager.
type Outage struct {
	Dependency string
	// Since is when the circuit opened; Cause the error that opened it.
	Since time.Time
	Cause string
	// Types are the task types held back: those seen failing for want of
	// the dependency.
	Types []task.Type
	// Probes counts the probes (or trial reopenings) that found it still
	// down.
	Probes int
}

// circuits keeps one circuit per dependency (see the package
// documentation, Outages). A circuit opens when a task's outcome names its
// dependency unavailable; the task types and queues seen needing it are
// learnt then (a type or queue is held back while any dependency it needs
// is down). An open circuit is probed every ProbeInterval with the
// dependency's Probe and closes when the probe answers; a dependency
// without a probe is tried again by closing the circuit after a backoff
// (ProbeInterval doubling to ProbeMax), and the next outcome naming it
// reopens it.
type circuits struct {
	m  *Manager
	mu sync.Mutex
	// deps: every dependency seen unavailable (open or not), so a
	// dependency without a probe keeps its backoff across trials.
	deps   map[string]*circuit
	types  map[task.Type][]string // type → dependencies it needs
	queues map[int][]string       // queue index → dependencies its tasks need
	ctx    context.Context
	bg     sync.WaitGroup
}

// maxCause bounds the error text an Outage carries (into every heartbeat).
const maxCause = 300

type circuit struct {
	open    bool
	since   time.Time
	cause   string
	probes  int
	backoff time.Duration
}

func newCircuits(m *Manager) *circuits {
	return &circuits{m: m, deps: map[string]*circuit{}, types: map[task.Type][]string{}, queues: map[int][]string{}}
}

// start lets open circuits probe until ctx ends; wait waits for them.
func (c *circuits) start(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
}

func (c *circuits) wait() { c.bg.Wait() }

// trip records that a task of type t from queue qi found dep unavailable
// (cause): the circuit opens if it was closed.
func (c *circuits) trip(dep string, t task.Type, qi int, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.types[t], dep) {
		c.types[t] = append(c.types[t], dep)
	}
	if !slices.Contains(c.queues[qi], dep) {
		c.queues[qi] = append(c.queues[qi], dep)
	}
	cb := c.deps[dep]
	if cb == nil {
		cb = &circuit{}
		c.deps[dep] = cb
	}
	if cb.open {
		return
	}
	msg := cause.Error()
	if len(msg) > maxCause {
		msg = msg[:maxCause] + "…"
	}
	cb.open, cb.since, cb.cause = true, c.m.clk.Now(), msg
	c.m.log.Warn("dependency unavailable: circuit open; its tasks are handed back without counting attempts",
		"dependency", dep, "task_type", string(t), "error", cause.Error())
	if c.ctx == nil || c.ctx.Err() != nil {
		return
	}
	ctx := c.ctx
	c.bg.Go(func() { c.probe(ctx, dep, cb) })
}

// probe runs while dep's circuit is open and closes it when dep answers.
func (c *circuits) probe(ctx context.Context, dep string, cb *circuit) {
	cfg := c.m.cfg
	p := cfg.Probes[dep]
	if svc, _, ok := strings.Cut(dep, " "); p == nil && ok {
		p = cfg.Probes[svc] // "dynamodb <host>": the service's probe
	}
	for {
		wait := cfg.ProbeInterval
		if p == nil {
			c.mu.Lock()
			cb.backoff = min(max(2*cb.backoff, cfg.ProbeInterval), cfg.ProbeMax)
			wait = cb.backoff
			c.mu.Unlock()
		}
		if clock.Sleep(ctx, c.m.clk, wait) != nil {
			return
		}
		if p != nil {
			pctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
			err := p(pctx)
			cancel()
			if err != nil {
				c.mu.Lock()
				cb.probes++
				c.mu.Unlock()
				c.m.log.Debug("dependency still unavailable", "dependency", dep, "error", err)
				continue
			}
		}
		c.close(dep, cb, p != nil)
		return
	}
}

// close closes dep's circuit and wakes the queues it held back.
func (c *circuits) close(dep string, cb *circuit, probed bool) {
	c.mu.Lock()
	cb.open = false
	down := c.m.clk.Now().Sub(cb.since)
	var wake []int
	for qi, deps := range c.queues {
		if slices.Contains(deps, dep) && !c.anyOpenLocked(deps) {
			wake = append(wake, qi)
		}
	}
	if probed {
		cb.backoff = 0
	}
	c.mu.Unlock()
	if probed {
		c.m.log.Info("dependency answers again: circuit closed", "dependency", dep, "down_for", down.Round(time.Millisecond))
	} else {
		c.m.log.Info("dependency without a probe: circuit closed on trial", "dependency", dep, "down_for", down.Round(time.Millisecond))
	}
	now := c.m.clk.Now()
	for _, qi := range wake {
		c.m.wakes.at(qi, now)
	}
}

func (c *circuits) anyOpenLocked(deps []string) bool {
	for _, d := range deps {
		if cb := c.deps[d]; cb != nil && cb.open {
			return true
		}
	}
	return false
}

// typeDown returns a dependency of t whose circuit is open.
func (c *circuits) typeDown(t task.Type) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.types[t] {
		if cb := c.deps[d]; cb != nil && cb.open {
			return d, true
		}
	}
	return "", false
}

// queueDown reports whether queue qi carries tasks that need a dependency
// whose circuit is open.
func (c *circuits) queueDown(qi int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.anyOpenLocked(c.queues[qi])
}

// outages lists the open circuits, by dependency.
func (c *circuits) outages() []Outage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Outage
	for dep, cb := range c.deps {
		if !cb.open {
			continue
		}
		o := Outage{Dependency: dep, Since: cb.since, Cause: cb.cause, Probes: cb.probes}
		for t, deps := range c.types {
			if slices.Contains(deps, dep) {
				o.Types = append(o.Types, t)
			}
		}
		slices.Sort(o.Types)
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out
}
