package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/pack"
)

// TestEvidencePackEndToEnd runs the real millctl against the emulator and
// PostgreSQL: two S3 stores holding a space (store 2's copies archived),
// their verdicts in the bit log, the policy and its change log, and an
// evidence log of the quarter with a failed check, its repair and the
// check after it. `millctl evidence pack` writes the quarter's bundle:
// every file, the events counted, the copies with their stores' places
// and storage classes, and the NDSA cells with their verdicts and files.
// A registry with a hostile threatZone is refused at its line and column,
// and no bundle is written.
func TestEvidencePackEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newColdFleet(ctx, t, "compute-checksum")
	accounts := fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1", "provider": "aws", "threatZone": "us-east-coast"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1", "provider": "aws", "threatZone": "us-central"}]}]}`,
		f.hotBucket, f.coldBucket)
	f.writeConfig("accounts.json", accounts)
	f.writeConfig("duplication-accounts.json", `["acme"]`)
	f.writeConfig("acme-duplication-policy.json", `{"spaceDuplicationStorePolicies": {}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	f.setup()

	const space, n = "records", 3
	f.seed(coldSeed{space: space, n: n,
		id:    func(i int) string { return fmt.Sprintf("rec-%02d.pdf", i) },
		body:  func(i int) []byte { return []byte(fmt.Sprintf("record %d\n", i)) },
		class: func(int) string { return "GLACIER" },
	})
	now := time.Now().UTC()
	for _, store := range []string{"1", "2"} {
		for i := range n {
			method := bitlog.MethodRead
			if store == "2" {
				method = bitlog.MethodAtRest
			}
			if err := f.bitLog.Record(ctx, bitlog.Row{RunID: now.Format("20060102T150405Z"), Account: account, StoreID: store, SpaceID: space,
				ContentID: fmt.Sprintf("rec-%02d.pdf", i), Result: bitlog.ResultSuccess, Case: 1, Method: method, Archived: store == "2",
				CheckedAt: now.Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	changes, err := fschangelog.New(filepath.Join(f.conf, "console-changes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := changes.Record(ctx, changelog.Change{Time: now.Add(-time.Hour), User: "ada", Role: "admin", Action: "policy.save", Target: "acme", Summary: "1→2"}); err != nil {
		t.Fatal(err)
	}

	// The evidence log of the quarter, and its public key.
	logDir, keyFile := t.TempDir(), filepath.Join(t.TempDir(), "evidence.vkey")
	skey, vkey, err := evidence.GenerateKey("mill.test/e2e-evidence")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := evidence.Open(ctx, dirblob.New(logDir, nil), skey, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	workman := evidence.Agent{Kind: evidence.Software, Name: "workman", Instance: "i-e2e", Version: "e2e"}
	cp := func(store string, i int) evidence.Copy {
		return evidence.Copy{Account: account, Store: store, Space: space, ContentID: fmt.Sprintf("rec-%02d.pdf", i)}
	}
	var events []*evidence.Event
	at := now.Add(-30 * time.Minute)
	add := func(e *evidence.Event) {
		at = at.Add(time.Second)
		e.V, e.ID, e.Time, e.Agent = evidence.FormatVersion, evidence.EventID("e2e", fmt.Sprint(len(events))), evidence.FormatTime(at), workman
		events = append(events, e)
	}
	digest := func(d string) *evidence.Fixity {
		return &evidence.Fixity{Algorithm: evidence.MD5, Digest: d, Expected: strings.Repeat("a", 32), Method: evidence.MethodRead}
	}
	for i := range n {
		add(&evidence.Event{Type: evidence.Replication, Object: cp("2", i), Source: new(cp("1", i)), Outcome: evidence.Success})
		add(&evidence.Event{Type: evidence.FixityCheck, Object: cp("1", i), Fixity: digest(strings.Repeat("a", 32)), Outcome: evidence.Success})
	}
	add(&evidence.Event{Type: evidence.FixityCheck, Object: cp("2", 0), Fixity: digest(strings.Repeat("b", 32)), Outcome: evidence.Failure})
	add(&evidence.Event{Type: evidence.Repair, Object: cp("2", 0), Source: new(cp("1", 0)), Outcome: evidence.Success})
	add(&evidence.Event{Type: evidence.FixityCheck, Object: cp("2", 0), Fixity: digest(strings.Repeat("a", 32)), Outcome: evidence.Success})
	if _, err := l.Append(ctx, events); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	quarter := fmt.Sprintf("%d-Q%d", now.Year(), (int(now.Month())-1)/3+1)
	c := f.run("millctl", "evidence", "pack", "--period", quarter, "--log", logDir, "--key", keyFile, "--out-dir", out)
	path := strings.SplitN(c.Stdout(), "\n", 2)[0]
	if !strings.HasPrefix(filepath.Base(path), "mill-evidence-"+quarter+"-") {
		t.Fatalf("bundle %q\n%s", path, c.Output())
	}
	files := readTarGz(t, path)
	for _, name := range []string{"README.md", "ndsa.md", "ndsa.json", "checkpoint.txt", "verifier-key.txt", "verification.txt",
		"fixity-coverage.json", "copies.json", "policies.json", "policy-history.json", "events-summary.json", "SHA256SUMS"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the bundle lacks %s", name)
		}
	}
	if want := fmt.Sprintf("OK: 1 signed checkpoints, %d events", len(events)); !strings.HasPrefix(files["verification.txt"], want) {
		t.Errorf("verification.txt %q, want %q", files["verification.txt"], want)
	}
	var ev struct {
		Total, Repairs, RepairsVerified, CorruptCopies, Unrepaired int64
	}
	if err := json.Unmarshal([]byte(files["events-summary.json"]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Total != int64(len(events)) || ev.Repairs != 1 || ev.RepairsVerified != 1 || ev.CorruptCopies != 1 || ev.Unrepaired != 0 {
		t.Errorf("events summary %+v", ev)
	}
	var copies []struct {
		Space  string
		Copies []struct {
			Store, Provider, Region, ThreatZone, Media string
			Items                                      int64
			Complete                                   bool
			Archived                                   int64 `json:"verdictsArchived"`
		}
	}
	if err := json.Unmarshal([]byte(files["copies.json"]), &copies); err != nil {
		t.Fatal(err)
	}
	if len(copies) != 1 || copies[0].Space != space || len(copies[0].Copies) != 2 {
		t.Fatalf("copies.json: %s", files["copies.json"])
	}
	if c2 := copies[0].Copies[1]; c2.Store != "2" || c2.ThreatZone != "us-central" || c2.Media != "s3:archive" || c2.Archived != n || !c2.Complete || c2.Items != n {
		t.Errorf("store 2's copy: %+v", c2)
	}
	var m struct {
		Cells []struct {
			Area         string
			Level        int
			Verdict      string
			Files        []string
			Requirements []struct {
				Requirement, Verdict, Why string
				Files                     []string
			}
		}
	}
	if err := json.Unmarshal([]byte(files["ndsa.json"]), &m); err != nil || len(m.Cells) != 16 {
		t.Fatalf("ndsa.json (%v): %s", err, files["ndsa.json"])
	}
	verdicts := map[string]string{}
	for _, cell := range m.Cells {
		if !strings.Contains(files["ndsa.md"], fmt.Sprintf("## %s, level %d", cell.Area, cell.Level)) {
			t.Errorf("ndsa.md lacks the cell %s %d", cell.Area, cell.Level)
		}
		for _, r := range cell.Requirements {
			verdicts[r.Requirement] = r.Verdict
			for _, name := range r.Files {
				if _, ok := files[name]; !ok {
					t.Errorf("%q rests on %s, which the bundle lacks", r.Requirement, name)
				}
			}
		}
	}
	for req, want := range map[string]string{
		"Two complete copies in separate locations":                             "met",
		"Three complete copies, at least one in a separate geographic location": "not met", // two copies, one region
		"At least one copy in a location with a different disaster threat":      "met",
		"At least one copy on a different storage media type":                   "met", // s3 and s3:archive
		"Maximise storage diversification (no single point of failure)":         "partial",
		"Verify integrity information at fixed intervals":                       "met",
		"Back up integrity information in a location separate from the content": "met",
		"Replace or repair corrupted content":                                   "met",
		"Verify integrity in response to specific events":                       "met",
		"Keep logs naming the agents that acted on content":                     "met",
	} {
		if verdicts[req] != want {
			t.Errorf("%q: %q, want %q", req, verdicts[req], want)
		}
	}

	// A hostile registry: refused at its line and column, no bundle.
	f.writeConfig("accounts.json", strings.Replace(accounts, `"threatZone": "us-central"`, `"threatZone": "us-central\u001b[2J"`, 1))
	out2 := t.TempDir()
	bad := testbin.Run(t, time.Minute, testbin.Spec{Path: f.bins["millctl"], Env: f.env,
		Args: []string{"evidence", "pack", "--period", quarter, "--log", logDir, "--key", keyFile, "--out-dir", out2}})
	if bad.ExitCode() != 1 || !strings.Contains(bad.Stderr(), `accounts.json:3:`) || !strings.Contains(bad.Stderr(), `threatZone "us-central\x1b[2J": character '\x1b'`) {
		t.Errorf("hostile registry: exit %d\n%s", bad.ExitCode(), bad.Output())
	}
	if left, _ := os.ReadDir(out2); len(left) != 0 {
		t.Errorf("a refused registry left %v", left)
	}
}

// readTarGz reads a bundle: file name (without its directory) to contents.
func readTarGz(t *testing.T, path string) map[string]string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	_, files, err := pack.ReadBundle(fh)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, b := range files {
		out[name] = string(b)
	}
	return out
}
