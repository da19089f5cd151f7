package pack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/ndsa"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

const registry = `{"accounts": [
 {"id": "acme", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": "acme-1", "region": "us-east-1", "provider": "aws", "threatZone": "us-east-coast"},
  {"id": "2", "kind": "s3", "bucket": "acme-2", "region": "us-west-2", "provider": "aws", "threatZone": "us-west-coast"},
  {"id": "3", "kind": "fs", "root": "/srv/acme-3", "region": "eu-central", "provider": "on-premises", "threatZone": "rhine-valley"}]},
 {"id": "beta", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": "beta-1", "region": "us-east-1", "provider": "aws"}]}]}`

// hostileSpace is a space name an auditor's Markdown viewer must show as
// text.
const hostileSpace = "x|<i>y"

type fixture struct {
	src    Sources
	dir    string // the evidence log's directory
	period Period
}

// newFixture builds a fleet in memory: acme's photos in three stores in
// three regions and threat zones (store 3 with one item never verified),
// beta's one space in one store and no policy; an evidence log with the
// period's checks, a replication, a failed check, its repair and the
// check after it, and one event before the period.
func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	reg, err := stores.Parse("accounts.json", []byte(registry))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePeriod("2026-Q3")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 10, 2, 9, 30, 0, 0, time.UTC))
	idx := memcontentindex.New()
	bl := membitlog.New(clk)
	spaces := []fixity.Space{{Account: "acme", StoreID: "1", SpaceID: "photos"}, {Account: "acme", StoreID: "2", SpaceID: "photos"},
		{Account: "acme", StoreID: "3", SpaceID: "photos"}, {Account: "beta", StoreID: "1", SpaceID: hostileSpace}}
	for _, sp := range spaces {
		for i := range 3 {
			id := fmt.Sprintf("item-%d", i)
			if _, err := idx.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID, ContentID: id},
				Checksum: fmt.Sprintf("%032x", i), Modified: p.Since}); err != nil {
				t.Fatal(err)
			}
			if sp.StoreID == "3" && i == 2 {
				continue // never verified
			}
			if err := bl.Record(ctx, bitlog.Row{RunID: "run-1", Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID, ContentID: id,
				Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, Archived: sp.StoreID == "2", CheckedAt: clk.Now().Add(-24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	dir := t.TempDir()
	skey, vkey, err := evidence.GenerateKey("mill.test/evidence")
	if err != nil {
		t.Fatal(err)
	}
	v, err := evidence.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := evidence.Open(ctx, dirblob.New(dir, nil), skey, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	workman := evidence.Agent{Kind: evidence.Software, Name: "workman", Instance: "i-1", Version: "v1.2.3"}
	at := func(d time.Duration) string { return evidence.FormatTime(p.Since.Add(d)) }
	cp := func(store, id string) evidence.Copy {
		return evidence.Copy{Account: "acme", Store: store, Space: "photos", ContentID: id}
	}
	check := func(n int, c evidence.Copy, when string, ok bool) *evidence.Event {
		e := &evidence.Event{V: evidence.FormatVersion, ID: evidence.EventID("bit", fmt.Sprint(n)), Type: evidence.FixityCheck, Time: when, Object: c,
			Fixity:  &evidence.Fixity{Algorithm: evidence.MD5, Digest: fmt.Sprintf("%032x", 1), Expected: fmt.Sprintf("%032x", 1), Method: evidence.MethodRead},
			Outcome: evidence.Success, Agent: workman}
		if !ok {
			e.Outcome, e.Fixity.Digest = evidence.Failure, fmt.Sprintf("%032x", 2)
		}
		return e
	}
	events := []*evidence.Event{
		check(0, cp("1", "item-1"), evidence.FormatTime(p.Since.Add(-time.Hour)), true), // before the period
		check(1, cp("1", "item-0"), at(time.Hour), true),
		check(2, cp("1", "item-1"), at(2*time.Hour), true),
		check(3, cp("2", "item-1"), at(3*time.Hour), false),
		{V: evidence.FormatVersion, ID: evidence.EventID("repair", "1"), Type: evidence.Repair, Time: at(4 * time.Hour),
			Object: cp("2", "item-1"), Source: new(cp("1", "item-1")), Outcome: evidence.Success, Agent: workman},
		check(4, cp("2", "item-1"), at(5*time.Hour), true),
		{V: evidence.FormatVersion, ID: evidence.EventID("dup", "1"), Type: evidence.Replication, Time: at(6 * time.Hour),
			Object: cp("3", "item-0"), Source: new(cp("1", "item-0")), Outcome: evidence.Success, Agent: workman},
	}
	if _, err := l.Append(ctx, events); err != nil {
		t.Fatal(err)
	}

	pol := policy.NewDir(t.TempDir())
	ap, err := policy.Parse("acme", []byte(`{"spaceDuplicationStorePolicies": {}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Put(ctx, "acme", ap); err != nil {
		t.Fatal(err)
	}
	changes, err := fschangelog.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []changelog.Change{
		{Time: p.Since.Add(-48 * time.Hour), User: "ada", Role: "admin", Action: "policy.save", Target: "acme", Summary: "1→2, 1→3"},
		{Time: p.Since.Add(24 * time.Hour), User: "bob", Role: "operator", Action: "fleet.pause", Target: "workman"},
		{Time: p.Until.Add(time.Hour), User: "eve", Role: "admin", Action: "policy.delete", Target: "acme"},
	} {
		if _, err := changes.Record(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return fixture{
		src: Sources{Registry: reg, Spaces: spaces, Index: idx, Verdicts: bl, Log: dirblob.New(dir, nil), Verifier: v, VerifierKey: vkey,
			Policies: pol, Changes: changes, Clock: clk},
		dir: dir, period: p,
	}
}

// readBundle reads the tar.gz back: file name to contents.
func readBundle(t *testing.T, b []byte, dir string) map[string][]byte {
	t.Helper()
	got, files, err := ReadBundle(bytes.NewReader(b))
	if err != nil || got != dir {
		t.Fatalf("bundle directory %q (%v), want %q", got, err, dir)
	}
	return files
}

func requirement(t *testing.T, cells []ndsa.Cell, a ndsa.Area, level int, prefix string) ndsa.Requirement {
	t.Helper()
	for _, c := range cells {
		if c.Area != a || c.Level != level {
			continue
		}
		for _, r := range c.Requirements {
			if strings.HasPrefix(r.Text, prefix) {
				return r
			}
		}
	}
	t.Fatalf("no requirement %s %d %q", a, level, prefix)
	return ndsa.Requirement{}
}

func TestPackFromMemoryBackends(t *testing.T) {
	f := newFixture(t)
	pk, err := Build(context.Background(), f.src, f.period)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pk.WriteTarGz(&buf); err != nil {
		t.Fatal(err)
	}
	if pk.Name() != "mill-evidence-2026-Q3-20261002T093000Z.tar.gz" {
		t.Errorf("name %q", pk.Name())
	}
	files := readBundle(t, buf.Bytes(), "mill-evidence-2026-Q3")
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{FileSums, FileReadme, FileCheckpoint, FileCopies, FileEvents, FileCoverage, FileMatrixJSON, FileMatrix, FilePolicies, FileHistory, FileKey, FileVerification}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}

	// Every file's sum, and the checkpoint as the log stores it.
	for _, line := range strings.Split(strings.TrimSpace(string(files[FileSums])), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		h := sha256.Sum256(files[name])
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
	}
	if n := strings.Count(string(files[FileSums]), "\n"); n != len(want)-1 {
		t.Errorf("SHA256SUMS lists %d files, want %d", n, len(want)-1)
	}
	stored, err := os.ReadFile(filepath.Join(f.dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[FileCheckpoint], stored) {
		t.Errorf("checkpoint.txt is not the log's checkpoint")
	}
	if _, err := evidence.OpenCheckpoint(files[FileCheckpoint], f.src.Verifier); err != nil {
		t.Errorf("checkpoint.txt does not verify: %v", err)
	}
	if v, err := evidence.NewVerifier(strings.TrimSpace(string(files[FileKey]))); err != nil || v.Name() != "mill.test/evidence" {
		t.Errorf("verifier-key.txt: %v", err)
	}
	if !strings.HasPrefix(string(files[FileVerification]), "OK: 1 signed checkpoints, 7 events") {
		t.Errorf("verification.txt: %s", files[FileVerification])
	}

	// The events of the period, counted.
	var ev EventsSummary
	if err := json.Unmarshal(files[FileEvents], &ev); err != nil {
		t.Fatal(err)
	}
	wantTypes := []TypeCount{{"fixity check", "failure", 1}, {"fixity check", "success", 3}, {"repair", "success", 1}, {"replication", "success", 1}}
	if ev.Total != 6 || ev.LogSize != 7 || !slices.Equal(ev.ByType, wantTypes) || ev.Repairs != 1 || ev.RepairsVerified != 1 || ev.CorruptCopies != 1 || ev.Unrepaired != 0 {
		t.Errorf("events summary %+v", ev)
	}
	if len(ev.ByAgent) != 1 || ev.ByAgent[0] != (AgentCount{Kind: "software", Name: "workman", Version: "v1.2.3", Count: 6}) {
		t.Errorf("agents %+v", ev.ByAgent)
	}

	// Copies with their stores' places and storage classes.
	var copies []SpaceCopies
	if err := json.Unmarshal(files[FileCopies], &copies); err != nil {
		t.Fatal(err)
	}
	if len(copies) != 2 || copies[0].Space != "photos" || len(copies[0].Copies) != 3 {
		t.Fatalf("copies %+v", copies)
	}
	if c := copies[0].Copies[1]; c != (StoreCopy{Store: "2", Kind: "s3", Provider: "aws", Region: "us-west-2", ThreatZone: "us-west-coast", Items: 3, Complete: true, Archived: 3, Media: "s3:archive"}) {
		t.Errorf("acme/2: %+v", c)
	}
	if c := copies[0].Copies[2]; c.Media != "fs" || c.Readable != 2 || c.Provider != "on-premises" {
		t.Errorf("acme/3: %+v", c)
	}

	// Policies in force and their history up to the period's end.
	if !strings.Contains(string(files[FilePolicies]), `"srcStoreId": "1"`) || !strings.Contains(string(files[FilePolicies]), `policy: account-not-listed`) {
		t.Errorf("policies.json: %s", files[FilePolicies])
	}
	var hist []changelog.Change
	if err := json.Unmarshal(files[FileHistory], &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].User != "ada" {
		t.Errorf("history %+v", hist)
	}

	// The verdicts.
	for _, tc := range []struct {
		area  ndsa.Area
		level int
		req   string
		want  ndsa.Verdict
		why   string
		files []string
	}{
		{ndsa.Storage, 1, "Two complete", ndsa.Partial, "1 of 2 spaces", []string{FileCopies}},
		{ndsa.Storage, 4, "At least three copies", ndsa.Partial, "beta/" + hostileSpace, []string{FileCopies}},
		{ndsa.Integrity, 1, "Verify integrity information provided", ndsa.Partial, "11 of 12 copies", []string{FileCoverage}},
		{ndsa.Integrity, 2, "Back up integrity", ndsa.Met, "verified", []string{FileCheckpoint, FileKey, FileVerification}},
		{ndsa.Integrity, 4, "Replace or repair", ndsa.Met, "1 of 1 copies", []string{FileEvents}},
		{ndsa.Integrity, 4, "Verify integrity in response", ndsa.Met, "1 of 1 repairs", []string{FileEvents}},
		{ndsa.Control, 1, "Determine", ndsa.Partial, "1 of 2 active accounts", []string{FilePolicies}},
		{ndsa.Control, 2, "Document the authorised", ndsa.Partial, "1 recorded changes", []string{FilePolicies, FileHistory}},
		{ndsa.Metadata, 4, "Record preservation", ndsa.Met, "6 timed events", []string{FileEvents, FileCheckpoint, FileKey}},
	} {
		r := requirement(t, pk.Cells, tc.area, tc.level, tc.req)
		if r.Verdict != tc.want || !strings.Contains(r.Why, tc.why) || !slices.Equal(Files(r.Sources), tc.files) {
			t.Errorf("%s %d %q: %s (%s) files %v; want %s containing %q, files %v", tc.area, tc.level, r.Text, r.Verdict, r.Why, Files(r.Sources), tc.want, tc.why, tc.files)
		}
	}
	var matrix struct {
		Cells []struct {
			Area    string   `json:"area"`
			Level   int      `json:"level"`
			Verdict string   `json:"verdict"`
			Files   []string `json:"files"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(files[FileMatrixJSON], &matrix); err != nil {
		t.Fatal(err)
	}
	if len(matrix.Cells) != 16 {
		t.Fatalf("%d cells in ndsa.json", len(matrix.Cells))
	}
	for _, c := range matrix.Cells {
		for _, name := range c.Files {
			if _, ok := files[name]; !ok {
				t.Errorf("cell %s %d names %s, which the bundle lacks", c.Area, c.Level, name)
			}
		}
	}

	// The Markdown shows the hostile space name as text.
	md := string(files[FileMatrix])
	if strings.Contains(md, "<i>") || !strings.Contains(md, `x\|&lt;i&gt;y`) {
		t.Errorf("ndsa.md does not escape the space name:\n%s", md)
	}
	for _, name := range want {
		if name != FileReadme && !strings.Contains(string(files[FileReadme]), "`"+name+"`") {
			t.Errorf("README.md does not explain %s", name)
		}
	}
}

// A rewritten data tile is named in verification.txt and lowers the
// verdicts that rest on the log.
func TestPackOfATamperedLog(t *testing.T) {
	f := newFixture(t)
	tile := filepath.Join(f.dir, "tile", "8", "data", "000.p", "7")
	b, err := os.ReadFile(tile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tile, bytes.Replace(b, []byte(`"outcome":"failure"`), []byte(`"outcome":"success"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	pk, err := Build(context.Background(), f.src, f.period)
	if err != nil {
		t.Fatal(err)
	}
	files, err := pk.Contents()
	if err != nil {
		t.Fatal(err)
	}
	var verification string
	for _, fl := range files {
		if fl.name == FileVerification {
			verification = string(fl.data)
		}
	}
	if !strings.HasPrefix(verification, "FAILED: ") || !strings.Contains(verification, "problem: ") {
		t.Errorf("verification.txt: %s", verification)
	}
	if r := requirement(t, pk.Cells, ndsa.Integrity, 2, "Back up integrity"); r.Verdict != ndsa.Partial {
		t.Errorf("backup requirement of a tampered log: %s (%s)", r.Verdict, r.Why)
	}
	if r := requirement(t, pk.Cells, ndsa.Integrity, 3, "Audit integrity"); r.Verdict != ndsa.NotMet {
		t.Errorf("audit requirement of a tampered log: %s (%s)", r.Verdict, r.Why)
	}
}

func TestParsePeriod(t *testing.T) {
	for _, tc := range []struct{ in, name, since, until, err string }{
		{"2026-Q3", "2026-Q3", "2026-07-01", "2026-10-01", ""},
		{"2026-q4", "2026-Q4", "2026-10-01", "2027-01-01", ""},
		{"2026-07", "2026-07", "2026-07-01", "2026-08-01", ""},
		{"2026-12", "2026-12", "2026-12-01", "2027-01-01", ""},
		{"2026-13", "", "", "", "month 13"},
		{"2026-Q5", "", "", "", "want a quarter"},
		{"2026-Q3/../x", "", "", "", "want a quarter"},
		{"", "", "", "", "want a quarter"},
	} {
		p, err := ParsePeriod(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p.Name != tc.name || p.Since.Format(time.DateOnly) != tc.since || p.Until.Format(time.DateOnly) != tc.until {
			t.Errorf("%q: %+v %v", tc.in, p, err)
		}
	}
	since, _ := ParseTime("2026-07-01")
	until, _ := ParseTime("2026-07-15T12:00:00+02:00")
	p, err := Range(since, until)
	if err != nil || p.Name != "2026-07-01--2026-07-15T100000Z" {
		t.Errorf("range %+v %v", p, err)
	}
	if _, err := Range(until, since); err == nil {
		t.Error("a range ending before it starts was accepted")
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("ParseTime accepted yesterday")
	}
}
