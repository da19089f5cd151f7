package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// osvEntry is a minimal OSV entry affecting module path.
func osvEntry(id, path string) string {
	return `{
  "id": "` + id + `",
  "summary": "test entry",
  "affected": [{"package": {"name": "` + path + `", "ecosystem": "Go"},
    "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.2.3"}]}]}]
}`
}

func TestSnapshotKeepsOnlyThisBuildsModulesAndExtractRoundTrips(t *testing.T) {
	from := t.TempDir()
	entries := map[string]string{
		"GO-2099-0001": "stdlib",
		"GO-2099-0002": "github.com/jackc/pgx/v5", // in go.mod
		"GO-2099-0003": "example.com/not/a/dependency",
		"GO-2099-0004": "toolchain",
	}
	for id, path := range entries {
		if err := os.WriteFile(filepath.Join(from, id+".json"), []byte(osvEntry(id, path)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "snap.jsonl")
	if err := snapshot([]string{"-from", from, "-source", "test", "-out", out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	var h header
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		t.Fatalf("header: %v", err)
	}
	if h.Source != "test" || h.Entries != 3 || len(h.Modules) == 0 {
		t.Errorf("header = %+v, want source test, 3 entries and the module list", h)
	}
	var ids []string
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sc.Text(), "\n") {
			t.Errorf("entry %s spans lines", e.ID)
		}
		ids = append(ids, e.ID)
	}
	if got := strings.Join(ids, " "); got != "GO-2099-0001 GO-2099-0002 GO-2099-0004" {
		t.Errorf("kept %q, want the stdlib, pgx and toolchain entries in ID order", got)
	}

	dir := t.TempDir()
	if err := extract([]string{"-in", out, "-dir", dir}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var e entry
		if err := json.Unmarshal(b, &e); err != nil || e.ID != id {
			t.Errorf("%s.json holds %q (%v)", id, e.ID, err)
		}
	}
}

func TestExtractRefusesATruncatedSnapshot(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.jsonl")
	body := `{"source":"test","written":"2026-01-02T00:00:00Z","entries":2,"modules":[]}` + "\n" +
		strings.ReplaceAll(osvEntry("GO-2099-0001", "stdlib"), "\n", "") + "\n"
	if err := os.WriteFile(snap, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	err := extract([]string{"-in", snap, "-dir", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "header says 2 entries, found 1") {
		t.Fatalf("extract of a truncated snapshot: %v, want the entry-count mismatch", err)
	}
}

func TestSnapshotRefusesMisnamedEntries(t *testing.T) {
	from := t.TempDir()
	if err := os.WriteFile(filepath.Join(from, "wrong.json"), []byte(osvEntry("GO-2099-0001", "stdlib")), 0o644); err != nil {
		t.Fatal(err)
	}
	err := snapshot([]string{"-from", from, "-out", filepath.Join(t.TempDir(), "s")})
	if err == nil || !strings.Contains(err.Error(), "wrong.json") {
		t.Fatalf("snapshot of a misnamed entry: %v, want an error naming the file", err)
	}
}
