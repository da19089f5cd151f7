package contentindex_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/contentindextest"
)

func TestMemory(t *testing.T) {
	contentindextest.Run(t, func(t *testing.T) contentindex.Index { return contentindex.NewMemory() })
}
