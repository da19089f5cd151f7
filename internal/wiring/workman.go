package wiring

import (
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bitreport"
)

// WorkmanConfig is what differs between the ways Mill runs Workman
// (cmd/workman, `millctl run`, `millctl dev`); Workman builds the rest the
// same way for all three.
type WorkmanConfig struct {
	// Types are the task types served (default Types, see NewMux); tasks
	// of other types are dead-lettered.
	Types []task.Type
	// Manager tunes the manager. Its Queues default to the Deps' six work
	// queues in queue.DefaultPriority order and its DeadLetter to the
	// Deps' dead-letter queue; Handler and ProcessorName are the
	// processors' (set by Workman). Its Logger is also the chain's, and
	// its Observer, when it also is a processors.Observer, is told every
	// task's outcome (ChainConfig.Observer).
	Manager workman.Config
	// Its Outcomes default to RunOutcomes(d) (the record of runs).
	// Outer middleware goes around the chain (ChainConfig.Outer).
	Outer []processors.Middleware
}

// Workman builds the manager every way of running the mill runs: the
// processors of cfg.Types over d (NewMux) behind Chain, received from
// cfg.Manager's queues. d comes from AWS or Memory.
func Workman(d *Deps, cfg WorkmanConfig) (*workman.Manager, error) {
	mux, err := NewMux(d, cfg.Types...)
	if err != nil {
		return nil, err
	}
	mc := cfg.Manager
	if len(mc.Queues) == 0 {
		for _, k := range queue.DefaultPriority {
			q, err := d.Queues.Get(k)
			if err != nil {
				return nil, err
			}
			mc.Queues = append(mc.Queues, q)
		}
	}
	if mc.DeadLetter == nil {
		if mc.DeadLetter, err = d.Queues.Get(queue.KeyDeadLetter); err != nil {
			return nil, err
		}
	}
	if mc.Probes == nil {
		mc.Probes = d.Probes
	}
	if mc.OnDeadLetter == nil && d.BitLog != nil {
		mc.OnDeadLetter = bitreport.DeadLettered(d.BitLog)
	}
	if mc.Outcomes == nil {
		if o := RunOutcomes(d); o != nil {
			mc.Outcomes = o
		}
	}
	chain := ChainConfig{Logger: mc.Logger, Outer: cfg.Outer}
	if o, ok := mc.Observer.(processors.Observer); ok {
		chain.Observer = o
	}
	mc.Handler = Chain(mux, chain)
	mc.ProcessorName = mux.ProcessorName
	return workman.New(mc)
}
