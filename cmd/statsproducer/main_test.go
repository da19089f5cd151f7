package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/cli/producercmd"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
)

func TestUsageErrors(t *testing.T) {
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"--progress", "fancy", "--wire-format", "xml", "--max-queue-size", "0",
		"--frequency", "6h", "--start-at", "02:00"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code := producercmd.ExitCode("statsproducer", err, &stderr); code != 2 {
		t.Fatalf("exit %d, err %v", code, err)
	}
	for _, w := range []string{`--progress "fancy"`, "--wire-format", "--max-queue-size 0", "--start-at 02:00", "--database-url"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	stderr.Reset()
	err = run(t.Context(), []string{"--help"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "MILL_NOTIFY_TOPIC_ARN") ||
		!strings.Contains(stderr.String(), "MILL_START_AT") || !strings.Contains(stderr.String(), "STORAGE_STATS") {
		t.Errorf("--help: %v\n%s", err, stderr.String())
	}
}

// TestRunOnEmulator: a filesystem store with two spaces (one excluded) and
// a history holding a third space the store no longer has; the invocation
// queues a STORAGE_STATS on the emulator's bit queue for the included space
// and for the gone one, each with the run's ID; the second is not due.
func TestRunOnEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	ctx := t.Context()
	db, err := milldb.Open(ctx, dbURL, milldb.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	if err := pgspacestats.New(db.Pool).Put(ctx, spacestats.Stats{RunID: "20260101T020000Z", Account: "acme", StoreID: "1",
		SpaceID: "gone", Items: 4, Bytes: 40, Measured: time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	if _, err := (setup.Queue{Client: sqsc, QueueName: prefix + "bit", VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
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
		if _, err := st.Put(ctx, sp, "a", strings.NewReader("a"), storage.PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
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
	env := map[string]string{"MILL_QUEUE_PREFIX": prefix, "MILL_STATE": filepath.Join(dir, "state.json"),
		"MILL_LEASE_TABLE": "none", "MILL_DATABASE_URL": dbURL}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	args := []string{"--config-dir", dir, "--exclude", exclude, "--progress", "off"}
	var out, errOut bytes.Buffer
	if err := run(ctx, args, getenv, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "statsproducer: done") || !strings.Contains(out.String(), "2 tasks queued") {
		t.Errorf("summary:\n%s", out.String())
	}
	q, err := sqsqueue.Open(ctx, sqsc, prefix+"bit", sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var spaces, runs []string
	for range 5 {
		msgs, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			tk, err := task.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			s, err := task.StorageStatsFrom(tk)
			if err != nil {
				t.Fatal(err)
			}
			spaces = append(spaces, s.Account+"/"+s.StoreID+"/"+s.SpaceID)
			runs = append(runs, s.RunID)
		}
		if len(spaces) >= 2 {
			break
		}
	}
	slices.Sort(spaces)
	if !slices.Equal(spaces, []string{"acme/1/docs", "acme/1/gone"}) || runs[0] == "" || runs[0] != runs[1] {
		t.Errorf("queued %v, runs %v", spaces, runs)
	}
	out.Reset()
	if err := run(ctx, args, getenv, &out, &errOut); err != nil || !strings.Contains(out.String(), "not due until") {
		t.Errorf("second invocation: %v\n%s", err, out.String())
	}
}
