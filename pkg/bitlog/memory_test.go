package bitlog_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/bitlogtest"
)

func TestMemory(t *testing.T) {
	bitlogtest.Run(t, func(t *testing.T) bitlog.Log { return bitlog.NewMemory(nil) })
}
