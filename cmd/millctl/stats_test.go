package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
)

// TestStatsCommand reads space_stats on PostgreSQL: the latest counts by
// space, store and account with the total, one space's history, --json, and
// usage errors.
func TestStatsCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	st := pgspacestats.New(db.Pool)
	d1 := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)
	d2 := d1.Add(24 * time.Hour)
	for _, r := range []spacestats.Stats{
		{RunID: "20260501T020000Z", Account: "acme", StoreID: "1", SpaceID: "photos", Items: 10, Bytes: 1 << 20, Measured: d1},
		{RunID: "20260502T020000Z", Account: "acme", StoreID: "1", SpaceID: "photos", Items: 8, Bytes: 1 << 19, Measured: d2},
		{RunID: "20260502T020000Z", Account: "acme", StoreID: "2", SpaceID: "photos", Items: 8, Bytes: 1 << 19, Measured: d2},
		{RunID: "20260502T020000Z", Account: "beta", StoreID: "1", SpaceID: "docs", Items: 3, Bytes: 300, Measured: d2},
	} {
		if err := st.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"MILL_DATABASE_URL": url}

	code, out, errOut := setupRun(t, env, "stats")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "ACCOUNT") || !strings.Contains(lines[1], "acme") ||
		!strings.Contains(lines[1], "524288") || !strings.Contains(lines[1], "512.0 KiB") || !strings.Contains(lines[3], "docs") ||
		lines[4] != "total: 3 spaces, 19 items, 1048876 bytes (1.0 MiB)" {
		t.Fatalf("stats: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = setupRun(t, env, "stats", "--by", "account")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 4 || !strings.Contains(lines[1], "acme") ||
		!strings.Contains(lines[1], "  2  ") || !strings.Contains(lines[1], "1048576") {
		t.Fatalf("stats --by account: %d\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, "stats", "--account", "acme", "--by", "store", "--json")
	var rows []statsJSON
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r statsJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	if code != 0 || len(rows) != 2 || rows[0].StoreID != "1" || rows[0].Items != 8 || rows[0].SpaceID != "" || rows[1].StoreID != "2" {
		t.Fatalf("stats --json: %d %+v", code, rows)
	}
	code, out, _ = setupRun(t, env, "stats", "--account", "acme", "--store", "1", "--space", "photos", "--history")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "20260502T020000Z") || !strings.Contains(lines[2], "1048576") {
		t.Fatalf("stats --history: %d\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, "stats", "--account", "acme", "--history", "--since", "2026-05-02", "--json")
	var h []historyJSON
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var x historyJSON
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		h = append(h, x)
	}
	if code != 0 || len(h) != 1 || h[0].Spaces != 2 || h[0].Items != 16 || h[0].Bytes != 1<<20 {
		t.Fatalf("stats --history --since --json: %+v", h)
	}
	for _, bad := range [][]string{{"stats", "--by", "bucket"}, {"stats", "--since", "yesterday"}, {"stats", "--limit", "0"}, {"stats", "extra"}} {
		if code, _, _ := setupRun(t, env, bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	if code, out, _ := setupRun(t, env, "stats", "--account", "nobody"); code != 0 || !strings.Contains(out, "no statistics recorded") {
		t.Errorf("empty selection: %d %q", code, out)
	}
}
