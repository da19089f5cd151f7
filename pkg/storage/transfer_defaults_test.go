package storage_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// TestTransferWithDefaults: zero and negative fields take the defaults,
// positive ones are kept.
func TestTransferWithDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want storage.Transfer }{
		{storage.Transfer{}, storage.Transfer{Streams: storage.DefaultStreams, PartSize: storage.DefaultPartSize}},
		{storage.Transfer{Streams: -1, PartSize: -1}, storage.Transfer{Streams: storage.DefaultStreams, PartSize: storage.DefaultPartSize}},
		{storage.Transfer{Streams: 2, PartSize: 5 << 20}, storage.Transfer{Streams: 2, PartSize: 5 << 20}},
	} {
		if got := tc.in.WithDefaults(); got != tc.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
