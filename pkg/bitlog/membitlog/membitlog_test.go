package membitlog_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/bitlogtest"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
)

func TestMemory(t *testing.T) {
	bitlogtest.Run(t, bitlogtest.Harness{New: func(t *testing.T) bitlog.Log { return membitlog.New(nil) }})
}
