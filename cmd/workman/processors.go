package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// parseTaskTypes reads --task-types: "all" (every processor of
// internal/wiring) or a comma-separated list of task types.
func parseTaskTypes(s string) ([]task.Type, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "all" {
		return wiring.Types, nil
	}
	var out []task.Type
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		t := task.Type(strings.ToUpper(p))
		if !t.Known() {
			return nil, fmt.Errorf("task-types: unknown task type %q", p)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("task-types: no task type in %q", s)
	}
	return out, nil
}

// registerProcessors builds the processors of types from the dependencies
// internal/wiring opens, and registers them in mux: the same registration
// `millctl run` and `millctl dev` use. close releases the dependencies.
func registerProcessors(ctx context.Context, mux *processors.Mux, cfg wiring.AWSConfig) (close func() error, err error) {
	d, close, err := wiring.AWS(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := wiring.RegisterTypes(mux, d, cfg.Types); err != nil {
		_ = close()
		return nil, err
	}
	return close, nil
}
