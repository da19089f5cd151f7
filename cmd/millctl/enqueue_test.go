package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/queue"
)

// TestEnqueueRunQueues: validation, files, --count, queues --json and the
// table, then run drains a queue of NOOP tasks.
func TestEnqueueRunQueues(t *testing.T) {
	e := newOpsEnv(t)
	if code, _, errOut := e.millctl("", "enqueue", "--type", "DUP", "--prop", "account=a", "--prop", "storeId=1"); code != 1 || !strings.Contains(errOut, "destStoreId") {
		t.Errorf("invalid DUP: %d %s", code, errOut)
	}
	if code, _, errOut := e.millctl("", "enqueue", "--type", "NOOP"); code != 2 || !strings.Contains(errOut, "give --queue") {
		t.Errorf("NOOP without --queue: %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	lines := `{"type":"DUP","props":{"account":"a","storeId":"1","destStoreId":"2","spaceId":"s","contentId":"c"}}
{"type":"BIT","props":{"account":"a","storeId":"1","spaceId":"s","contentId":"c"}}
`
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.must("", "enqueue", "--wire-format", "properties", file)
	if !strings.Contains(out, "1 sent to "+e.prefix+"dup-high") || !strings.Contains(out, "1 sent to "+e.prefix+"bit\n") &&
		!strings.Contains(out, "1 sent to "+e.prefix+"bit (") {
		t.Errorf("enqueue file: %s", out)
	}
	e.must("", "enqueue", "--type", "noop", "--queue", "dup-low", "--count", "5", "--prop", "sleep=10ms")

	out = e.must("", "queues", "--json", "--no-age")
	var rows []queuestats.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 7 {
		t.Fatalf("queues --json: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.Key] = r.Visible + r.Delayed + r.InFlight
		if r.Error != "" || r.OldestAgeSeconds != nil {
			t.Errorf("row %+v", r)
		}
	}
	if got[queue.KeyDupHigh] != 1 || got[queue.KeyBit] != 1 || got[queue.KeyDupLow] != 5 || got[queue.KeyAudit] != 0 {
		t.Errorf("depths %v", got)
	}
	out = e.must("", "queues")
	if !strings.HasPrefix(out, "QUEUE") || !strings.Contains(out, "OLDEST") || strings.Count(out, "\n") != 8 {
		t.Errorf("queues table:\n%s", out)
	}

	out = e.must("", "run", "--queue", "dup-low", "--check", "500ms")
	if !strings.Contains(out, "run: "+e.prefix+"dup-low: 5 done, 0 failed attempts, 0 dead-lettered") {
		t.Errorf("run: %s", out)
	}
	if d := e.depth(queue.KeyDupLow); d.Total() != 0 {
		t.Errorf("dup-low after run: %+v", d)
	}
}
