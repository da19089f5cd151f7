package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/cli/producercmd"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

func noEnv(string) string { return "" }

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("# x\n/acme/1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"every problem at once", []string{"--progress", "fancy", "--wire-format", "xml", "--bite-size", "0", "--exclude", bad},
			nil, []string{"--progress \"fancy\"", "--wire-format", "--bite-size 0", "bad.txt:2", "--database-url (MILL_DATABASE_URL) is required"}},
		{"bad frequency from the environment", nil, map[string]string{"MILL_FREQUENCY": "5x"}, []string{"MILL_FREQUENCY"}},
		{"stray argument", []string{"now"}, nil, []string{"unexpected arguments"}},
		{"bad restore settings", []string{"--restore-days", "0", "--restore-tier", "Glacial"}, nil, []string{"--restore-days: 0", "--restore-tier: \"Glacial\""}},
		{"bad restore settings from the environment", nil, map[string]string{"MILL_RESTORE_TIER": "Deep"}, []string{"\"Deep\""}},
		{"bad skip margins", []string{"--skip-covered", "soon", "--skip-recent", "-1d"}, nil, []string{"--skip-covered", "(or off)", "--skip-recent"}},
		{"both skips", []string{"--skip-covered", "1d", "--skip-recent", "60d"}, nil, []string{"--skip-recent and --skip-covered: use one"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(t.Context(), tt.args, func(k string) string { return tt.env[k] }, &bytes.Buffer{}, &stderr)
			if code := producercmd.ExitCode("bitproducer", err, &stderr); code != 2 {
				t.Fatalf("exit %d, err %v", code, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"--help"}, noEnv, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, flag.ErrHelp) || producercmd.ExitCode("bitproducer", err, &stderr) != 0 || !strings.Contains(stderr.String(), "MILL_MAX_QUEUE_SIZE") {
		t.Errorf("--help: %v\n%s", err, stderr.String())
	}
}

// TestRunOnEmulator: a filesystem store in a config directory, queues on
// the emulator: the first invocation queues a BIT per item of the included
// spaces and one BIT_REPORT each; the second is not due and exits 0.
func TestRunOnEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := t.Context()
	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	for _, k := range []string{"bit", "bit-report"} {
		if _, err := (setup.Queue{Client: sqsc, QueueName: prefix + k, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "store1")
	st, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range []string{"docs", "x-scratch"} {
		if err := st.CreateSpace(ctx, sp); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b/c", "d"} {
			if _, err := st.Put(ctx, sp, id, strings.NewReader(id), storage.PutOptions{Size: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	accounts := `{"accounts": [{"id": "acme", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "` + root + `"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "accounts.json"), []byte(accounts), 0o600); err != nil {
		t.Fatal(err)
	}
	exclude := filepath.Join(dir, "exclude.txt")
	if err := os.WriteFile(exclude, []byte("/*/*/x-*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Two of docs' three copies are indexed; one has a fresh verdict.
	idx := pgcontentindex.New(pool)
	for _, id := range []string{"a", "d"} {
		if _, err := idx.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "docs", ContentID: id},
			Modified: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgbitlog.New(pool).Record(ctx, bitlog.Row{Account: "acme", StoreID: "1", SpaceID: "docs", ContentID: "a",
		Result: bitlog.ResultSuccess, Case: 1, Method: bitlog.MethodRead, Bytes: 1}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"MILL_DATABASE_URL": dbURL,
		"MILL_QUEUE_PREFIX": prefix,
		"MILL_STATE":        filepath.Join(dir, "state.json"),
		"MILL_LEASE_TABLE":  "none",
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	args := []string{"--config-dir", dir, "--exclude", exclude, "--frequency", "1d", "--progress", "off"}
	var out, errOut bytes.Buffer
	if err := run(ctx, args, getenv, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "bitproducer: done after 1 bites, 4 tasks queued; 1/1 morsels done") {
		t.Errorf("summary:\n%s", out.String())
	}
	for k, want := range map[string]int64{"bit": 3, "bit-report": 1} {
		q, err := sqsqueue.Open(context.Background(), sqsc, prefix+k, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Visible != want {
			t.Errorf("%s: %d visible, want %d", k, d.Visible, want)
		}
	}
	// The store's fixity coverage is logged at the run's start.
	if !regexp.MustCompile(`"msg":"fixity coverage","account":"acme","store_id":"1","spaces":1,"copies":2,"within":1,"overdue":1,"never_verified":1,`).MatchString(errOut.String()) {
		t.Errorf("no coverage line in the log:\n%s", errOut.String())
	}
	// The run is recorded in the bit log: the space and the items listed.
	var runID, account, space string
	var expected int64
	if err := pool.QueryRow(ctx, "SELECT run_id, account, space_id, expected FROM bit_run_space").Scan(&runID, &account, &space, &expected); err != nil ||
		account != "acme" || space != "docs" || expected != 3 || !strings.HasPrefix(runID, "20") {
		t.Errorf("bit_run_space: %q %q %q %d %v, want the run's record of acme/1/docs with 3 items", runID, account, space, expected, err)
	}
	out.Reset()
	if err := run(ctx, args, getenv, &out, &errOut); err != nil || !strings.Contains(out.String(), "not due until") {
		t.Errorf("second invocation: %v\n%s", err, out.String())
	}
}
