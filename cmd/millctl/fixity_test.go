package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// TestFixityCoverageCommand reads the content index and the bit log's
// verdicts on PostgreSQL, the spaces from two filesystem stores: copies
// within target, overdue (old, or never verified: a stored-only row is no
// verdict), the oldest verdict's age, the shares by method, per space and
// per store; --account/--store, --json, --prometheus and usage errors.
func TestFixityCoverageCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	dir := t.TempDir()
	for store, spaces := range map[string][]string{"store1": {"docs", "photos"}, "store2": {"empty"}} {
		st, err := fsstore.New(filepath.Join(dir, store))
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spaces {
			if err := st.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	accounts := `{"accounts": [{"id": "acme", "status": "active", "stores": [
	  {"id": "1", "primary": true, "kind": "fs", "root": "` + filepath.Join(dir, "store1") + `", "fixity": {"interval": "30d"}},
	  {"id": "2", "kind": "fs", "root": "` + filepath.Join(dir, "store2") + `", "fixity": {"interval": "7d"}}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "accounts.json"), []byte(accounts), 0o600); err != nil {
		t.Fatal(err)
	}
	idx, log := pgcontentindex.New(db.Pool), pgbitlog.New(db.Pool)
	now, day := time.Now(), 24*time.Hour
	for sp, ids := range map[string][]string{"docs": {"a", "b", "c"}, "photos": {"x", "y"}} {
		for _, id := range ids {
			if _, err := idx.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: sp, ContentID: id},
				Modified: now.Add(-400 * day)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range []bitlog.Row{
		{RunID: "20260101T000000Z", SpaceID: "docs", ContentID: "a", Method: bitlog.MethodRead, CheckedAt: now.Add(-10 * day)},
		{RunID: "20260101T000000Z", SpaceID: "docs", ContentID: "b", Method: bitlog.MethodRead, CheckedAt: now.Add(-100 * day)},
		{RunID: "20260101T000000Z", SpaceID: "photos", ContentID: "x", Method: bitlog.MethodAtRest, Archived: true, CheckedAt: now.Add(-200 * day)},
		{RunID: "20260101T000000Z", SpaceID: "photos", ContentID: "y", Method: bitlog.MethodStored, CheckedAt: now.Add(-day)},
	} {
		r.Account, r.StoreID, r.Result, r.Case = "acme", "1", bitlog.ResultSuccess, 1
		if err := log.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"MILL_DATABASE_URL": url, "MILL_CONFIG_DIR": dir}

	code, out, errOut := setupRun(t, env, "fixity", "coverage")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, want := range []string{
		`^ACCOUNT +STORE +SPACE +COPIES +WITHIN TARGET +OVERDUE +NEVER +NOT COVERED +OLDEST +READ +AT-REST +TARGET`,
		`^acme +1 +docs +3 +1 \(33\.3%\) +2 +1 +0 +100d +66\.7% +0\.0% +30d +$`,
		`^acme +1 +photos +2 +1 \(50\.0%\) +1 +1 +0 +200d +0\.0% +50\.0% +30d +$`,
		`^acme +1 +\(total\) +5 +2 \(40\.0%\) +3 +2 +0 +200d +40\.0% +20\.0%`,
		`^acme +2 +empty +0 +0 \(0\.0%\) +0 +0 +0 +- +0\.0% +0\.0% +7d +$`,
		`^acme +2 +\(total\) +0 `,
		`^all: 5 copies in 3 spaces, 2 \(40\.0%\) within target, 3 overdue \(2 never verified\), 0 not covered; oldest verdict 200d$`,
	} {
		if code != 0 || len(lines) != 7 || !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Fatalf("fixity coverage: exit %d, line %d does not match %s\n%s%s", code, i, want, out, errOut)
		}
	}

	code, out, _ = setupRun(t, env, "fixity", "coverage", "--account", "acme", "--store", "1", "--json")
	var rows []coverageJSON
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r coverageJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	if code != 0 || len(rows) != 3 || rows[0].SpaceID != "docs" || rows[0].Level != "space" || rows[0].Within != 1 || rows[0].Overdue != 2 ||
		rows[1].AtRest != 1 || rows[1].NeverVerified != 1 || rows[2].Level != "store" || rows[2].Copies != 5 || rows[2].OldestVerdict == nil ||
		rows[2].OldestAgeSeconds < 200*86400 || rows[2].IntervalSeconds != 30*86400 || rows[2].ShareWithin != 0.4 {
		t.Fatalf("--json: %d %+v", code, rows)
	}

	code, out, _ = setupRun(t, env, "fixity", "coverage", "--prometheus")
	for _, want := range []string{"# TYPE mill_fixity_copies_overdue gauge\n", `mill_fixity_copies_overdue{account="acme",store="1"} 3` + "\n",
		`mill_fixity_copies_overdue{account="acme",store="2"} 0` + "\n", `mill_fixity_copies_within_target{account="acme",store="1"} 2` + "\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("--prometheus lacks %q: %d\n%s", want, code, out)
		}
	}

	for _, bad := range [][]string{{"--json", "--prometheus"}, {"--store", "1"}, {"extra"}} {
		if code, _, _ := setupRun(t, env, append([]string{"fixity", "coverage"}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	if code, _, errOut := setupRun(t, env, "fixity", "coverage", "--account", "nobody"); code != 1 || !strings.Contains(errOut, "nobody") {
		t.Errorf("unknown account: exit %d: %s", code, errOut)
	}
}
