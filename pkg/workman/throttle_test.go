package workman

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// slowDown is what the AWS SDK returns when S3 still answers 503 SlowDown
// after its retries.
func slowDown() error {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:4566/hot/k", nil)
	resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Request: req}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp},
			Err: &smithy.GenericAPIError{Code: "SlowDown"}}}}
}

// TestThrottledCountsNoAttemptAndOpensNoCircuit: tasks of one store
// throttled for three minutes — longer than three attempts last — are
// released with the throttling delay, never counted as attempts, never
// dead-lettered; no circuit opens, so the tasks of another store on the
// same queue keep running throughout.
func TestThrottledCountsNoAttemptAndOpensNoCircuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var throttled atomic.Bool
		throttled.Store(true)
		rec := &recorder{fn: func(ctx context.Context, tk *task.Task) error {
			if tk.Get("store") == "hot" && throttled.Load() {
				return fmt.Errorf("dup: get: %w", slowDown())
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{queues: 1, handler: rec})
		rec.clk = h.clk
		for i := range 5 {
			h.put(0, task.New(task.TypeBit, map[string]string{"id": fmt.Sprint("hot", i), "store": "hot"}))
		}
		h.start()
		for i := range 6 {
			h.advance(30 * time.Second)
			h.put(0, task.New(task.TypeBit, map[string]string{"id": fmt.Sprint("cold", i), "store": "cold"}))
			if outs := h.m.Outages(); len(outs) != 0 {
				t.Fatalf("throttling opened a circuit: %+v", outs)
			}
		}
		h.advance(5 * time.Second)
		if h.dlq.Len() != 0 {
			t.Fatalf("%d tasks dead-lettered while throttled: %+v", h.dlq.Len(), readDLQ(t, h.dlq))
		}
		cold, hot := 0, map[string][]time.Time{}
		for _, c := range rec.get() {
			if c.attempts != 0 {
				t.Errorf("an attempt was counted: %+v", c)
			}
			if c.id[:3] == "hot" {
				hot[c.id] = append(hot[c.id], c.at)
			} else {
				cold++
			}
		}
		if cold != 6 {
			t.Errorf("%d of 6 tasks of the other store ran while one store throttled", cold)
		}
		for id, ats := range hot {
			for i := 1; i < len(ats); i++ {
				if d := ats[i].Sub(ats[i-1]); d < processors.DefaultThrottleDelay {
					t.Errorf("%s tried again %v after a throttle, want at least %v", id, d, processors.DefaultThrottleDelay)
				}
			}
			if len(ats) < 4 {
				t.Errorf("%s tried %d times in 3 minutes, want it picked up again when each delay ends", id, len(ats))
			}
		}
		throttled.Store(false)
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatal("the throttled tasks did not finish once the throttling stopped")
		}
		if h.dlq.Len() != 0 {
			t.Fatalf("%d dead letters", h.dlq.Len())
		}
	})
}
