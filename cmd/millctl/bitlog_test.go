package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/milldb"
)

func TestBitlogCommands(t *testing.T) {
	url := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := milldb.Open(ctx, url, milldb.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	l := milldb.NewBitLog(db.Pool)
	at := time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"a", "b", "c\tx"} {
		res := bitlog.ResultSuccess
		if i == 1 {
			res = bitlog.ResultFailure
		}
		for _, run := range []string{"r1", "r2"} {
			if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
				ContentID: id, Result: res, Case: 1 + i, Details: "line1\nline2", CheckedAt: at}); err != nil {
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
		!strings.Contains(lines[2], "FAILURE") || !strings.Contains(lines[3], `"c\tx"`) || !strings.Contains(lines[1], "line1 line2") {
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
	if code != 0 || len(rows) != 2 || rows[0].RunID != "r1" || rows[1].RunID != "r2" || rows[0].ContentID != "b" || rows[0].Case != 2 || !rows[0].CheckedAt.Equal(at) {
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
