package main

import (
	"context"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/processors"
)

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
