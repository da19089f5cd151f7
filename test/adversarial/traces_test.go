package adversarial

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/telemetry"
)

// collector is a stand-in OTLP/HTTP collector: it keeps the bodies posted
// to /v1/traces (protobuf; the test looks for trace IDs' bytes in them).
type collector struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" {
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) holds(id []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bodies {
		if bytes.Contains(b, id) {
			return true
		}
	}
	return false
}

// TestHostileTraceparents: the real workman with tracing on (its spans
// posted to a stand-in collector) runs NOOP tasks whose traceparent
// attribute is malformed, oversized, all zeros or in upper case, a Java
// .properties task without one, and one with a good traceparent: every
// task runs, none is dead-lettered, workman stays up, and only the good
// trace context reaches the collector (the forged ones are new roots).
func TestHostileTraceparents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	coll := &collector{}
	srv := httptest.NewServer(coll)
	defer srv.Close()
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	w := m.startWorkman("--otlp-endpoint", srv.URL)

	const goodTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	forgedTraces := []string{"1111111111111111aaaaaaaaaaaaaaaa", "2222222222222222bbbbbbbbbbbbbbbb", "abcdef0123456789abcdef0123456789"}
	upper := "00-" + strings.ToUpper(forgedTraces[2]) + "-00f067aa0ba902b7-01"
	hostile := map[string]string{
		"garbage":   "not a traceparent",
		"short":     "00-4bf92f35-00f067aa-01",
		"zeros":     "00-00000000000000000000000000000000-0000000000000000-01",
		"version":   "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"upper":     upper,
		"oversized": "00-" + forgedTraces[0] + "-00f067aa0ba902b7-01-" + strings.Repeat("x", 4000),
		"control":   "00-" + forgedTraces[1] + "-00f067aa0ba902b7-01\n\x01",
	}
	for id, v := range hostile {
		m.send(queue.KeyAudit, encode(t, task.New(task.TypeNoop, map[string]string{"id": "hostile-" + id})),
			map[string]string{telemetry.AttrTraceparent: v})
	}
	java, err := task.Encode(task.New(task.TypeNoop, map[string]string{"id": "java-no-attr"}), task.FormatProperties)
	must(t, err)
	m.send(queue.KeyAudit, string(java), nil)
	m.send(queue.KeyAudit, encode(t, task.New(task.TypeNoop, map[string]string{"id": "good"})),
		map[string]string{telemetry.AttrTraceparent: "00-" + goodTrace + "-00f067aa0ba902b7-01"})

	if !m.drained(60*time.Second, w) {
		t.Fatal("the tasks did not drain")
	}
	w.alive(t)
	if dl := m.deadLetters(1, 3*time.Second, w); len(dl) != 0 {
		t.Errorf("dead letters %+v, want none", dl)
	}
	rec, _ := os.ReadFile(w.record)
	for _, id := range append([]string{"java-no-attr", "good"}, func() (ids []string) {
		for id := range hostile {
			ids = append(ids, "hostile-"+id)
		}
		return
	}()...) {
		if !strings.Contains(string(rec), id) {
			t.Errorf("task %s did not run (record: %q)", id, rec)
		}
	}
	// Stopping flushes the spans.
	_ = w.Stop()
	good, _ := hex.DecodeString(goodTrace)
	if !coll.holds(good) {
		t.Errorf("the collector got no span of the good trace (%d posts)", len(coll.bodies))
	}
	for _, f := range forgedTraces {
		forged, _ := hex.DecodeString(f)
		if coll.holds(forged) {
			t.Errorf("the collector got a span in trace %s of an invalid traceparent", f)
		}
	}
}
