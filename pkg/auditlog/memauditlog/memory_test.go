package memauditlog_test

import (
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"testing"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/auditlogtest"
)

func TestMemory(t *testing.T) {
	auditlogtest.Run(t, func(t *testing.T) auditlog.Log { return memauditlog.New() })
}
