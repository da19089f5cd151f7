package memcontentindex_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/contentindextest"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
)

func TestMemory(t *testing.T) {
	contentindextest.Run(t, contentindextest.Harness{New: func(t *testing.T) contentindex.Index { return memcontentindex.New() }})
}
