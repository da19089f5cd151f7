package console_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/bitlog"
)

// seedBits records a run of acme/1/photos: 6 healthy items, one repaired
// (case 2, re-checked after the repair), one case-8 error; and its report
// file. It returns the run id.
func seedBits(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	run := "20260501T030000Z"
	row := func(id string, res bitlog.Result, c int, details string) {
		if err := e.bits.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id,
			Result: res, Case: c, Details: details, ContentChecksum: "aa", StorageChecksum: "aa"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg", "f.jpg"} {
		row(id, bitlog.ResultSuccess, 1, "all agree")
	}
	row("g.jpg", bitlog.ResultSuccess, 1, "all agree; re-check after case 2: repaired from store 2")
	row("h.jpg", bitlog.ResultError, 8, "removed from storage; resolution: external: no other store holds a copy")
	loc := filepath.Join(e.dir, "reports", "bit-integrity", "acme", "1", "photos", run+".tsv")
	if err := os.MkdirAll(filepath.Dir(loc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loc, []byte("date_checked\taccount\n2026-05-01\tacme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.bits.PutReport(ctx, bitlog.Report{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", Result: bitlog.ResultError,
		Counts: bitlog.Counts{Total: 8, Success: 7, Error: 1}, Location: loc}); err != nil {
		t.Fatal(err)
	}
	// A report whose location points outside the reports directory.
	if err := e.bits.PutReport(ctx, bitlog.Report{RunID: run, Account: "acme", StoreID: "1", SpaceID: "docs", Result: bitlog.ResultSuccess,
		Counts: bitlog.Counts{Total: 1, Success: 1}, Location: "/etc/passwd"}); err != nil {
		t.Fatal(err)
	}
	return run
}

func TestBitPages(t *testing.T) {
	e := newEnv(t)
	run := seedBits(t, e)
	_, body := e.do(e.viewer, "GET", "/bit", nil)
	if !strings.Contains(body, run) || !strings.Contains(body, `<span class="n">9</span> items`) || !strings.Contains(body, "result-error") {
		t.Fatalf("runs page:\n%s", body)
	}
	_, body = e.do(e.viewer, "GET", "/bit/run?run="+run, nil)
	if !strings.Contains(body, ">photos<") || !strings.Contains(body, ">docs<") {
		t.Fatalf("run page:\n%s", body)
	}
	_, body = e.do(e.viewer, "GET", "/bit/space?run="+run+"&account=acme&store=1&space=photos", nil)
	for _, want := range []string{`<td>1</td><td><span class="result result-success">SUCCESS</span></td><td class="num">7</td>`,
		`<td>8</td><td><span class="result result-error">ERROR</span></td><td class="num">1</td>`, `id="tsv"`} {
		if !strings.Contains(body, want) {
			t.Errorf("space page lacks %s", want)
		}
	}
	_, body = e.do(e.viewer, "GET", "/bit/results?run="+run+"&case=8", nil)
	if !strings.Contains(body, "h.jpg") || strings.Contains(body, "a.jpg") {
		t.Errorf("case 8 results:\n%s", body)
	}
	_, body = e.do(e.viewer, "GET", "/bit/results?repaired=1", nil)
	if !strings.Contains(body, "g.jpg") || strings.Contains(body, "h.jpg") || strings.Contains(body, "a.jpg") {
		t.Errorf("repaired results:\n%s", body)
	}
	_, body = e.do(e.viewer, "GET", "/bit/results?run="+run+"&result=ERROR", nil)
	if !strings.Contains(body, "h.jpg") || strings.Contains(body, "g.jpg") {
		t.Errorf("ERROR results")
	}
	if resp, _ := e.do(e.viewer, "GET", "/bit/results?case=12", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("case 12: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.viewer, "GET", "/bit/results?after=forged", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("forged page token: %d", resp.StatusCode)
	}
	resp, body := e.do(e.viewer, "GET", "/bit/report.tsv?run="+run+"&account=acme&store=1&space=photos", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "date_checked\t") || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename="acme-1-photos-`+run+`.tsv"`) {
		t.Errorf("TSV: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = e.do(e.viewer, "GET", "/bit/report.tsv?run="+run+"&account=acme&store=1&space=docs", nil)
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "root:") {
		t.Errorf("a report outside the reports directory: %d", resp.StatusCode)
	}
}

// A filter the bit log cannot apply reads at most the scan budget per page
// and links to where it stopped.
func TestResultsScanBudget(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 30 {
		res, c := bitlog.ResultSuccess, 1
		if i%10 == 9 {
			res, c = bitlog.ResultFailure, 5
		}
		if err := e.bits.Record(ctx, bitlog.Row{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "s", ContentID: string(rune('a' + i)), Result: res, Case: c}); err != nil {
			t.Fatal(err)
		}
	}
	rows, next, st, err := console.ScanForTest(ctx, e.bits, bitlog.Filter{RunID: "r1"}, func(r bitlog.Row) bool { return r.Case == 5 }, 100, 15)
	if err != nil || len(rows) != 1 || next == "" || st != 15 {
		t.Fatalf("first scan: %d rows, next %q, read %d, %v", len(rows), next, st, err)
	}
	rows, next, st, err = console.ScanForTest(ctx, e.bits, bitlog.Filter{RunID: "r1", After: next}, func(r bitlog.Row) bool { return r.Case == 5 }, 100, 15)
	if err != nil || len(rows) != 2 || next != "" || st != 15 {
		t.Fatalf("second scan: %d rows, next %q, read %d, %v", len(rows), next, st, err)
	}
}

func TestNoBitLog(t *testing.T) {
	e := newEnv(t)
	c, err := console.New(console.Config{Auth: auth.Anonymous{Role: auth.RoleViewer}, Files: e.files, Changes: e.changes,
		Queues: nil})
	if err == nil || c != nil {
		t.Fatal("a console without queues was built")
	}
}

func TestCheckListen(t *testing.T) {
	none := auth.Anonymous{Role: auth.RoleAdmin}
	for _, ok := range []string{"127.0.0.1:8080", "[::1]:80", "localhost:8080", "127.9.9.9:1"} {
		if err := console.CheckListen(ok, none); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:8080", ":8080", "10.0.0.5:8080", "[::]:80", "example.org:80"} {
		if err := console.CheckListen(bad, none); err == nil {
			t.Errorf("--auth none on %s accepted", bad)
		}
	}
	tk := &auth.Tokens{}
	if err := console.CheckListen("0.0.0.0:8080", tk); err != nil {
		t.Errorf("tokens on 0.0.0.0: %v", err)
	}
}
