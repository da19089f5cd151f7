package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/evidence/pack"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// untar reads a bundle: file name (without its directory) to contents.
func untar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, files, err := pack.ReadBundle(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, b := range files {
		out[name] = string(b)
	}
	return out
}

// TestEvidencePackCommand: a pack of a quarter from two fs stores in two
// regions and threat zones, the content index and bit log on PostgreSQL,
// a directory evidence log and the policies and change log in the config
// directory; then the usage errors, and a tampered log (bundle written,
// exit 1).
func TestEvidencePackCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	dir := t.TempDir()
	for _, store := range []string{"store1", "store2"} {
		st, err := fsstore.New(filepath.Join(dir, store))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSpace(ctx, "photos"); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"accounts.json": `{"accounts": [{"id": "acme", "status": "active", "stores": [
		  {"id": "1", "primary": true, "kind": "fs", "root": "` + filepath.Join(dir, "store1") + `", "region": "us-east", "provider": "own", "threatZone": "east"},
		  {"id": "2", "kind": "fs", "root": "` + filepath.Join(dir, "store2") + `", "region": "eu-west", "provider": "own", "threatZone": "west"}]}]}`,
		"duplication-accounts.json":    `["acme"]`,
		"acme-duplication-policy.json": `{"spaceDuplicationStorePolicies": {}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	idx, bl := pgcontentindex.New(db.Pool), pgbitlog.New(db.Pool)
	for _, store := range []string{"1", "2"} {
		for _, id := range []string{"a", "b"} {
			if _, err := idx.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: store, SpaceID: "photos", ContentID: id},
				Modified: time.Now().Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := bl.Record(ctx, bitlog.Row{RunID: "20260701T000000Z", Account: "acme", StoreID: store, SpaceID: "photos", ContentID: id,
				Result: bitlog.ResultSuccess, Case: 1, Method: bitlog.MethodRead, CheckedAt: time.Now().Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logDir := t.TempDir()
	key, _ := evidenceLog(t, dirblob.New(logDir, nil))
	out := t.TempDir()
	env := map[string]string{"MILL_DATABASE_URL": url, "MILL_CONFIG_DIR": dir}

	code, stdout, stderr := setupRun(t, env, "evidence", "pack", "--period", "2026-Q3", "--log", logDir, "--key", key, "--out-dir", out)
	if code != 0 {
		t.Fatalf("pack: exit %d\n%s%s", code, stdout, stderr)
	}
	path := strings.SplitN(stdout, "\n", 2)[0]
	if filepath.Dir(path) != out || !strings.HasPrefix(filepath.Base(path), "mill-evidence-2026-Q3-") || !strings.HasSuffix(path, ".tar.gz") {
		t.Fatalf("bundle %q", path)
	}
	b := untar(t, path)
	if !strings.HasPrefix(b["verification.txt"], "OK: 3 signed checkpoints, 600 events") {
		t.Errorf("verification.txt: %s", b["verification.txt"])
	}
	var ev struct {
		Total  int64 `json:"total"`
		ByType []struct {
			Type    string `json:"type"`
			Outcome string `json:"outcome"`
			Count   int64  `json:"count"`
		} `json:"byTypeAndOutcome"`
	}
	if err := json.Unmarshal([]byte(b["events-summary.json"]), &ev); err != nil || ev.Total != 600 || len(ev.ByType) != 1 || ev.ByType[0].Count != 600 {
		t.Errorf("events-summary.json (%v): %s", err, b["events-summary.json"])
	}
	var m struct {
		Cells []struct {
			Area         string `json:"area"`
			Level        int    `json:"level"`
			Verdict      string `json:"verdict"`
			Requirements []struct {
				Requirement string   `json:"requirement"`
				Verdict     string   `json:"verdict"`
				Files       []string `json:"files"`
			} `json:"requirements"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(b["ndsa.json"]), &m); err != nil || len(m.Cells) != 16 {
		t.Fatalf("ndsa.json (%v): %s", err, b["ndsa.json"])
	}
	got := map[string]string{}
	for _, c := range m.Cells {
		for _, r := range c.Requirements {
			got[r.Requirement] = r.Verdict
			for _, f := range r.Files {
				if _, ok := b[f]; !ok {
					t.Errorf("%s names %s, not in the bundle", r.Requirement, f)
				}
			}
		}
	}
	for req, want := range map[string]string{
		"Two complete copies in separate locations":                               "met",
		"Three complete copies, at least one in a separate geographic location":   "not met",
		"At least one copy in a location with a different disaster threat":        "met",
		"Verify integrity information at fixed intervals":                         "met",
		"Determine the agents authorised to read, write, move and delete content": "met",
	} {
		if got[req] != want {
			t.Errorf("%q: %q, want %q", req, got[req], want)
		}
	}
	if !strings.Contains(b["copies.json"], `"threatZone": "west"`) || !strings.Contains(b["policies.json"], `"destStoreId": "2"`) {
		t.Errorf("copies.json or policies.json:\n%s\n%s", b["copies.json"], b["policies.json"])
	}

	for _, args := range [][]string{
		{"--period", "2026-13"},
		{"--period", "2026-Q3", "--since", "2026-07-01"},
		{"--since", "2026-07-01"},
		{"--since", "2026-08-01", "--until", "2026-07-01"},
		{"--period", "2026-Q3", "--out-dir", filepath.Join(out, "nope")},
	} {
		args = append([]string{"evidence", "pack", "--log", logDir, "--key", key}, args...)
		if code, _, stderr := setupRun(t, env, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}

	// A rewritten hash tile: the bundle is written, says so, and the
	// command fails.
	tile := filepath.Join(logDir, "tile", "8", "0", "001")
	tb, err := os.ReadFile(tile)
	if err != nil {
		t.Fatal(err)
	}
	tb[7] ^= 0x80
	if err := os.WriteFile(tile, tb, 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := t.TempDir()
	code, stdout, stderr = setupRun(t, env, "evidence", "pack", "--since", "2026-07-01", "--until", "2026-07-02", "--log", logDir, "--key", key, "--out-dir", out2)
	if code != 1 || !strings.Contains(stderr, "does not verify") {
		t.Fatalf("pack of a tampered log: exit %d\n%s%s", code, stdout, stderr)
	}
	b = untar(t, strings.SplitN(stdout, "\n", 2)[0])
	if !strings.HasPrefix(b["verification.txt"], "FAILED") || !strings.Contains(b["verification.txt"], "tile/8/0/001") {
		t.Errorf("verification.txt of a tampered log: %s", b["verification.txt"])
	}
}
