package prometheusmetrics_test

import (
	"github.com/millfleet/mill/pkg/metrics/prometheusmetrics"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/task"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHandlerEndpoints(t *testing.T) {
	p := prometheusmetrics.New(prometheusmetrics.Options{
		Requests: func() map[string]int64 { return map[string]int64{"ReceiveMessage": 7, "DeleteMessageBatch": 3} },
	})
	var ready atomic.Bool
	srv := httptest.NewServer(prometheusmetrics.Handler(p.Registry(), ready.Load))
	defer srv.Close()

	r := metrics.Multi(p, metrics.Nop{})
	r.TaskDone(task.TypeNoop, "success", 20*time.Millisecond)
	r.TaskDone(task.TypeNoop, "success", 30*time.Millisecond)
	r.TaskDone(task.TypeBit, "failure", time.Second)
	r.DeadLettered(task.TypeBit, "failed")
	r.Received("mill-audit", 0)
	r.Received("mill-bit", 10)
	r.InFlight(10)
	r.InFlight(-3)

	if code, _ := get(t, srv.URL+"/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	if code, _ := get(t, srv.URL+"/readyz"); code != 503 {
		t.Errorf("/readyz before ready: %d", code)
	}
	ready.Store(true)
	if code, _ := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz when ready: %d", code)
	}
	code, body := get(t, srv.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics %d", code)
	}
	for _, want := range []string{
		`mill_tasks_total{result="success",task_type="NOOP"} 2`,
		`mill_tasks_total{result="failure",task_type="BIT"} 1`,
		`mill_task_duration_seconds_count{task_type="NOOP"} 2`,
		`mill_tasks_in_flight 7`,
		`mill_receives_total{queue="mill-audit"} 1`,
		`mill_empty_receives_total{queue="mill-audit"} 1`,
		`mill_messages_received_total{queue="mill-bit"} 10`,
		`mill_dead_lettered_total{reason="failed",task_type="BIT"} 1`,
		`mill_sqs_requests_total{operation="ReceiveMessage"} 7`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
