package memduradb_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/duradbtest"
	"github.com/millfleet/mill/pkg/duradb/memduradb"
)

func TestConformance(t *testing.T) {
	duradbtest.Run(t, func(*testing.T) duradb.DB { return memduradb.New() })
}
