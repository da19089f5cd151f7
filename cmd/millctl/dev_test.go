package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

func runDev(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runDevCtx(t, ctx, args...)
}

func runDevCtx(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code = run(ctx, a, append([]string{"dev"}, args...))
	return code, out.String(), errb.String()
}

// TestDevConsole: with --console the console serves the run's policies,
// queues, dead letters and bit log after the run, and the editor saves into the dev
// mode's configuration; Ctrl-C (the context) ends it with exit 0.
func TestDevConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pages := map[string]string{}
	devOnConsole = func(url string) {
		defer cancel()
		for _, p := range []string{"/", "/policies", "/policies/acme", "/queues", "/bit", "/changes", "/dead-letters"} {
			resp, err := http.Get(url + p)
			if err != nil {
				t.Errorf("GET %s: %v", p, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d", p, resp.StatusCode)
			}
			pages[p] = string(b)
		}
	}
	t.Cleanup(func() { devOnConsole = nil })
	dir := filepath.Join(t.TempDir(), "dev")
	code, out, errs := runDevCtx(t, ctx, "--dir", dir, "--items", "20", "--console", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "console: http://127.0.0.1:") || !strings.Contains(out, "verdict         OK") {
		t.Errorf("output:\n%s", out)
	}
	for p, want := range map[string]string{
		"/policies": `href="/policies/globex"`, "/policies/acme": "photos", "/queues": "mill-dup-low", "/bit": "/bit/run?run=",
		"/dead-letters": `id="dl-table"`,
		"/":             "No producer run in progress.", // the run record is wired: the dev mode's runs are all completed
	} {
		if !strings.Contains(pages[p], want) {
			t.Errorf("%s lacks %q", p, want)
		}
	}
	if code, _, errs := runDev(t, "--dir", filepath.Join(t.TempDir(), "dev"), "--items", "5", "--console", "0.0.0.0:0"); code != 1 || !strings.Contains(errs, "loopback") {
		t.Errorf("--console on 0.0.0.0: exit %d: %s", code, errs)
	}
}

// TestDev runs the whole mill with a small item count: every fault found
// and fixed, exit 0, and the summary's key figures.
func TestDev(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	code, out, errs := runDev(t, "--dir", dir, "--items", "40", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"2 accounts, 5 stores, 5 spaces, 40 items seeded",
		"case 2  content went sour                        1",
		"case 5  content index wrong                      1",
		"case 7  audit entry missing                      1",
		"case 8  removed from storage, not captured       1",
		"BIT_ERROR tasks: case 2 ×1",
		"4 of 4 faults repaired or corrected",
		"dead-lettered   0",
		"20 space reports: each run reports every space on every store that holds it",
		"(the 5 spaces on their primary and destination stores: 10 per run) × 2 runs",
		"have been repaired or corrected since",
		"20 TSV files under " + filepath.Join(dir, "reports"),
		"STORAGE_STATS     10  (10 success)",
		"10 spaces counted, each equal to a listing",
		"bit-report                 3",
		"producer-run-completed     5",
		"space-created             10",
		"verdict         OK",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Healthy items: 40 seeded + their replicas, minus the four faults.
	if !strings.Contains(out, "case 1  healthy") {
		t.Errorf("no healthy count:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "reports", "bit-integrity", "*", "*", "*", "*.tsv"))
	if len(files) != 20 { // 10 (space, store) pairs, 2 runs
		t.Errorf("%d report files, want 20", len(files))
	}

	// A second run wipes the directory (same seed: same content).
	if err := os.WriteFile(filepath.Join(dir, "leftover"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runDev(t, "--dir", dir, "--items", "5"); code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "leftover")); !os.IsNotExist(err) {
		t.Errorf("leftover survived the wipe: %v", err)
	}
	// --keep leaves it and works in a run-* sub-directory.
	if err := os.WriteFile(filepath.Join(dir, "leftover"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runDev(t, "--dir", dir, "--items", "5", "--keep"); code != 0 {
		t.Fatalf("--keep run: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "leftover")); err != nil {
		t.Errorf("--keep removed leftover: %v", err)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "run-*")); len(runs) != 1 {
		t.Errorf("--keep: %d run directories, want 1", len(runs))
	}
}

// TestDevFailsWhenRepairIsDisabled: with the BIT_ERROR processor doing
// nothing, the sour replica is found but not repaired, and the run says so
// with a non-zero exit.
func TestDevFailsWhenRepairIsDisabled(t *testing.T) {
	devWrap = func(ty task.Type, h processors.Handler) processors.Handler {
		if ty != task.TypeBitError {
			return h
		}
		return processors.HandlerFunc(func(context.Context, *task.Task) error { return nil })
	}
	t.Cleanup(func() { devWrap = nil })
	code, out, errs := runDev(t, "--dir", filepath.Join(t.TempDir(), "dev"), "--items", "20")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"sour replica", "not repaired: content MD5", "expectation(s) not met"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(out, "verdict         FAILED") || !strings.Contains(out, "3 of 4 faults repaired") {
		t.Errorf("summary does not show the failure:\n%s", out)
	}
}

// TestDevFailsWhenStatisticsAreNotRecorded: a STORAGE_STATS processor that
// records nothing leaves spaces without statistics, and the run says so.
func TestDevFailsWhenStatisticsAreNotRecorded(t *testing.T) {
	devWrap = func(ty task.Type, h processors.Handler) processors.Handler {
		if ty != task.TypeStorageStats {
			return h
		}
		return processors.HandlerFunc(func(context.Context, *task.Task) error { return nil })
	}
	t.Cleanup(func() { devWrap = nil })
	code, out, errs := runDev(t, "--dir", filepath.Join(t.TempDir(), "dev"), "--items", "20")
	if code != 1 || !strings.Contains(out, "verdict         FAILED") || !strings.Contains(out, "0 spaces recorded, the stats producer queued 10") {
		t.Fatalf("exit %d, want 1 naming the missing statistics\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestDevRejectsTooFewItems(t *testing.T) {
	if code, _, errs := runDev(t, "--dir", t.TempDir(), "--items", "2"); code != 2 || !strings.Contains(errs, "at least 5") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
