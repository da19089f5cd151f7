package memblob_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/memblob"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{New: func(_ *testing.T, o *blob.Options) blobtest.Fixture {
		return blobtest.Fixture{Store: memblob.New(o)}
	}})
}
