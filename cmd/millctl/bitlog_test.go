package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
)

// migratedDB returns the URL of a new, migrated schema and a pool on it.
func migratedDB(t *testing.T, ctx context.Context) (string, *milldb.DB) {
	t.Helper()
	url := testenv.Schema(t)
	db, err := milldb.Open(ctx, url, milldb.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	return url, db
}

func TestBitlogCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	l := pgbitlog.New(db.Pool)
	at := time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"a", "b", "c\tx"} {
		res, method, bytes := bitlog.ResultSuccess, bitlog.Method(""), int64(0)
		if i == 1 {
			res, method, bytes = bitlog.ResultFailure, bitlog.MethodAtRest, 42
		}
		for _, run := range []string{"r1", "r2"} {
			if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
				ContentID: id, Result: res, Case: 1 + i, Details: "line1\nline2", CheckedAt: at,
				Method: method, Bytes: bytes, Archived: i == 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.PutReport(ctx, bitlog.Report{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "photos", Result: bitlog.ResultFailure,
		Counts: bitlog.Counts{Total: 3, Success: 2, Failure: 1}, Location: "s3://mill-reports/bit-integrity/acme/1/photos/r1.tsv", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MILL_DATABASE_URL": url}

	code, out, _ := setupRun(t, env, "bitlog", "results", "--run", "r1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "CHECKED") ||
		!strings.Contains(lines[2], "FAILURE") || !strings.Contains(lines[3], `"c\tx"`) || !strings.Contains(lines[1], `line1\nline2`) {
		t.Fatalf("results table (exit %d):\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, "bitlog", "results", "--result", "failure", "--json")
	var rows []resultJSON
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		var r resultJSON
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatalf("%q: %v", ln, err)
		}
		rows = append(rows, r)
	}
	if code != 0 || len(rows) != 2 || rows[0].RunID != "r1" || rows[1].RunID != "r2" || rows[0].ContentID != "b" || rows[0].Case != 2 || !rows[0].CheckedAt.Equal(at) ||
		rows[0].Method != "at-rest" || rows[0].Bytes != 42 || !rows[0].Archived {
		t.Fatalf("results --json (exit %d): %+v", code, rows)
	}
	// --limit pages across the log.
	code, out, _ = setupRun(t, env, "bitlog", "results", "--limit", "4", "--json")
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("--limit 4 (exit %d):\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, "bitlog", "results", "--account", "nobody", "--limit", "0")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("no rows (exit %d):\n%s", code, out)
	}

	code, out, _ = setupRun(t, env, "bitlog", "reports")
	if code != 0 || !strings.Contains(out, "FAILURE") || !strings.Contains(out, "s3://mill-reports/bit-integrity/acme/1/photos/r1.tsv") {
		t.Fatalf("reports (exit %d):\n%s", code, out)
	}
	code, out, _ = setupRun(t, env, "bitlog", "reports", "--run", "r1", "--json")
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Total != 3 || rep.Failure != 1 || rep.Result != "FAILURE" {
		t.Fatalf("reports --json (exit %d): %s %v", code, out, err)
	}

	for _, args := range [][]string{{"bitlog"}, {"bitlog", "sideways"}, {"bitlog", "results", "--result", "MAYBE"}, {"bitlog", "results", "extra"}} {
		if code, _, _ := setupRun(t, env, args...); code != 2 {
			t.Errorf("millctl %v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := setupRun(t, nil, "bitlog", "reports"); code != 2 || !strings.Contains(errOut, "MILL_DATABASE_URL") {
		t.Errorf("no database: exit %d %s", code, errOut)
	}
}

// TestBitlogRetention: the dry run shows the expired months and tombstones
// and changes nothing; --apply drops those months and purges those
// tombstones, keeping the rest.
func TestBitlogRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, db := migratedDB(t, ctx)
	l, ix := pgbitlog.New(db.Pool), pgcontentindex.New(db.Pool)
	now := time.Now().UTC()
	oldRun, newRun := "20200105T000000Z", now.Format("20060102T150405Z")
	for _, run := range []string{oldRun, oldRun, newRun} {
		id := run + "-" + time.Now().Format(time.RFC3339Nano)
		if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id, Result: bitlog.ResultSuccess}); err != nil {
			t.Fatal(err)
		}
	}
	item := func(id string) contentindex.Item {
		return contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id}
	}
	for id, at := range map[string]time.Time{"old": now.AddDate(0, 0, -200), "recent": now.AddDate(0, 0, -1)} {
		if _, err := ix.MarkDeleted(ctx, item(id), at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ix.Upsert(ctx, contentindex.Entry{Item: item("live"), Checksum: "x", Modified: now.AddDate(-1, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MILL_DATABASE_URL": url}

	code, out, _ := setupRun(t, env, "bitlog", "retention")
	if code != 0 || !regexp.MustCompile(`(?m)^2020-01\s+\S+\s+drop$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^`+now.Format("2006-01")+`\s+\S+\s+keep$`).MatchString(out) ||
		!strings.Contains(out, "content index: 1 tombstones") || !strings.Contains(out, "dry run: nothing changed; --apply drops 2 months and purges 1 tombstones") {
		t.Fatalf("dry run (exit %d):\n%s", code, out)
	}
	if c, _ := l.Count(ctx, oldRun, "acme", "1", "photos"); c.Total != 2 {
		t.Fatalf("the dry run changed the bit log: %+v", c)
	}

	code, out, _ = setupRun(t, env, "bitlog", "retention", "--apply")
	if code != 0 || !strings.Contains(out, "dropped 2020-01") || !strings.Contains(out, "done: dropped 2 months, purged 1 tombstones") {
		t.Fatalf("--apply (exit %d):\n%s", code, out)
	}
	if c, _ := l.Count(ctx, oldRun, "acme", "1", "photos"); c.Total != 0 {
		t.Errorf("the expired run still has %+v", c)
	}
	if c, _ := l.Count(ctx, newRun, "acme", "1", "photos"); c.Total != 1 {
		t.Errorf("this month's run has %+v, want its row kept", c)
	}
	if _, err := ix.Get(ctx, item("old")); !errors.Is(err, contentindex.ErrNotFound) {
		t.Errorf("old tombstone: %v, want purged", err)
	}
	for _, id := range []string{"recent", "live"} {
		if _, err := ix.Get(ctx, item(id)); err != nil {
			t.Errorf("%s: %v, want kept", id, err)
		}
	}

	if code, _, errOut := setupRun(t, env, "bitlog", "retention", "--tombstone-retention", "24h"); code != 2 || !strings.Contains(errOut, "at least 432h") {
		t.Errorf("a tombstone retention under the floor: exit %d, %s", code, errOut)
	}
}
