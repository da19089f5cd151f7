package adversarial

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/workman"
)

// TestWorkmanLogsResentDeadLetter: workman dead-letters a malformed task,
// and the answer to its SendMessageBatch breaks after the emulator stored
// the letter (a proxy in front of workman's SQS endpoint), so the SDK
// sends it again and the dead-letter queue holds the letter twice. The
// operator finds why in workman's log: one Warn line naming the
// dead-letter queue, SendMessageBatch, attempts 2 and the message ID of
// exactly one of the two copies.
func TestWorkmanLogsResentDeadLetter(t *testing.T) {
	ctx := context.Background()
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	proxy, _ := testenv.BreakSends(t, 1)
	m.extraEnv = append(m.extraEnv, "AWS_ENDPOINT_URL_SQS="+proxy.URL())
	w := m.startWorkman()
	m.send(queue.KeyAudit, "not a task", nil)

	dlqName := queue.Name(m.prefix, queue.KeyDeadLetter)
	dlq, err := sqsqueue.Open(ctx, m.sqsc, dlqName, sqsqueue.Config{})
	must(t, err)
	copies := map[string]*workman.DeadLetter{} // DLQ message ID → letter
	for deadline := time.Now().Add(time.Minute); len(copies) < 2 && time.Now().Before(deadline); {
		select {
		case <-w.Done():
			t.Fatalf("workman exited: %v\n%s", w.Cmd.ProcessState, w.Output())
		default:
		}
		ms, err := dlq.Receive(ctx, queue.MaxBatch, time.Second)
		must(t, err)
		for _, msg := range ms {
			d, err := workman.DecodeDeadLetter(msg)
			must(t, err)
			copies[msg.ID] = d
		}
	}
	if len(copies) != 2 || proxy.Breaks() != 1 {
		t.Fatalf("%d copies of the letter in %s, %d answers broken; want 2 and 1\n%s", len(copies), dlqName, proxy.Breaks(), w.Output())
	}
	for id, d := range copies {
		if string(d.Body) != "not a task" {
			t.Fatalf("letter %s is of %q, want the malformed task", id, d.Body)
		}
	}

	// The second copy is queued before the SDK's retry gets its answer,
	// and workman logs only once the call returns: wait for the line.
	var lines []map[string]any
	testbin.Poll(10*time.Second, 50*time.Millisecond, func() bool {
		lines = resendLines(w.Output())
		return len(lines) > 0
	})
	if len(lines) != 1 {
		t.Fatalf("%d resend lines in workman's log, want 1\n%s", len(lines), w.Output())
	}
	l := lines[0]
	if l["level"] != "WARN" || l["queue"] != dlqName || l["action"] != "SendMessageBatch" || l["attempts"] != float64(2) {
		t.Fatalf("resend line %v: want WARN, queue %s, SendMessageBatch, attempts 2", l, dlqName)
	}
	ids, _ := l["message_ids"].([]any)
	named := 0
	for id := range copies {
		if slices.Contains(ids, any(id)) {
			named++
		}
	}
	if len(ids) != 1 || named != 1 {
		t.Fatalf("resend line names %v; want exactly one of the copies %v", ids, slices.Collect(maps.Keys(copies)))
	}
	w.alive(t)
}

// resendLines are the JSON log lines of sends the SDK retried.
func resendLines(out string) []map[string]any {
	var lines []map[string]any
	for _, l := range strings.Split(out, "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(l), &r) == nil && strings.Contains(asString(r["msg"]), "send retried by the SDK") {
			lines = append(lines, r)
		}
	}
	return lines
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
