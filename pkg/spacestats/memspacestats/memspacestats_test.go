package memspacestats_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/spacestats/spacestatstest"
)

func TestMemory(t *testing.T) {
	spacestatstest.Run(t, spacestatstest.Harness{New: func(t *testing.T) spacestats.Store { return memspacestats.New(nil) }})
}
