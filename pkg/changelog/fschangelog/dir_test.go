package fschangelog_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/changelogtest"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
)

func TestDir(t *testing.T) {
	changelogtest.Run(t, changelogtest.Harness{New: func(t *testing.T) changelog.Log {
		d, err := fschangelog.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}})
}
