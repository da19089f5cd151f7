package fsstore

import (
	"os"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) *storagetest.Harness {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return &storagetest.Harness{
			Provider:          s,
			LargeSize:         3 << 20,
			InvalidContentIDs: []string{"../escape", "a/../../b", "/absolute", "trailing/", "a//b", "./a", "a/.", strings.Repeat("s", MaxSegmentLen+1)},
			Corrupt: func(t *testing.T, space, id string) {
				p, err := s.BlobPath(space, id)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				b[0] ^= 0x01
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
