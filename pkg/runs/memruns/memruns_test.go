package memruns_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/memruns"
	"github.com/millfleet/mill/pkg/runs/runstest"
)

func TestStore(t *testing.T) {
	runstest.Run(t, runstest.Harness{New: func(*testing.T) runs.Store { return memruns.New(nil) }})
}
