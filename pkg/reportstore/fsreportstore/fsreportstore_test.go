package fsreportstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/reportstore/reportstoretest"
)

func TestDir(t *testing.T) {
	reportstoretest.Run(t, reportstoretest.Harness{New: func(t *testing.T) reportstoretest.Fixture {
		parent := t.TempDir()
		dir := filepath.Join(parent, "reports")
		outside := filepath.Join(parent, "secret.tsv")
		if err := os.WriteFile(outside, []byte("not a report"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A link inside the directory to a file outside it.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link.tsv")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		return reportstoretest.Fixture{Store: fsreportstore.Store{Dir: dir}, Foreign: []string{outside, dir, link, dir + "x/r/a.tsv"}}
	}})
}

// TestPutRefusesEscapingKeys: a key never names a file outside Dir.
func TestPutRefusesEscapingKeys(t *testing.T) {
	dir := t.TempDir()
	s := fsreportstore.Store{Dir: filepath.Join(dir, "reports")}
	for _, key := range []string{"", "../x.tsv", "a/../../x.tsv", "/etc/x.tsv"} {
		if loc, err := s.Put(context.Background(), key, bytes.NewReader([]byte("x")), 1); err == nil {
			t.Errorf("Put(%q) stored %s", key, loc)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tsv")); !os.IsNotExist(err) {
		t.Errorf("a file appeared outside the store: %v", err)
	}
}

// TestPutShortReaderLeavesNothing: a reader shorter than size is an error
// and leaves no file under the key.
func TestPutShortReaderLeavesNothing(t *testing.T) {
	s := fsreportstore.Store{Dir: t.TempDir()}
	if _, err := s.Put(context.Background(), "r/a.tsv", bytes.NewReader([]byte("short")), 100); err == nil {
		t.Fatal("short body accepted")
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir, "r"))
	if len(entries) != 0 {
		t.Errorf("left %d files: %v", len(entries), entries)
	}
}
