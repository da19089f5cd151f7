package memauditlog_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/auditlog/memauditlog"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/auditlogtest"
)

func TestMemory(t *testing.T) {
	auditlogtest.Run(t, auditlogtest.Harness{New: func(t *testing.T) auditlog.Log { return memauditlog.New() }})
}
