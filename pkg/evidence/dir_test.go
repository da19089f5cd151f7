package evidence_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/blobstest"
)

// TestDirSuite runs the Blobs suite against the filesystem store.
func TestDirSuite(t *testing.T) {
	blobstest.Run(t, func(t *testing.T) evidence.Blobs { return evidence.Dir(t.TempDir()) })
}
