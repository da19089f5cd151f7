package queuestats_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/millfleet/mill/pkg/fleet/memfleet"

	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
)

type fixedAges map[string]float64

func (f fixedAges) OldestAge(_ context.Context, name string) *float64 {
	if v, ok := f[name]; ok {
		return &v
	}
	return nil
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	qs := map[string]*memqueue.Queue{}
	for _, k := range queue.AllKeys {
		qs[k] = memqueue.New("p-"+k, memqueue.Config{})
	}
	if err := qs[queue.KeyDupLow].Send(ctx, queue.SendEntry{Body: []byte("a")}, queue.SendEntry{Body: []byte("b")}, queue.SendEntry{Body: []byte("c"), Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := qs[queue.KeyDupLow].Receive(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	var missing atomic.Bool // the bit queue appears on the second read
	missing.Store(true)
	var opens atomic.Int32
	r := queuestats.New("p-", func(_ context.Context, key, name string) (queue.Queue, error) {
		opens.Add(1)
		if name != "p-"+key {
			return nil, fmt.Errorf("name %q for key %q", name, key)
		}
		if key == queue.KeyBit && missing.Load() {
			return nil, fmt.Errorf("open: %w", queue.ErrNotFound)
		}
		return qs[key], nil
	}, fixedAges{"p-dup-low": 42})
	rows, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		if row.Key != queue.AllKeys[i] {
			t.Errorf("row %d is %s, want %s", i, row.Key, queue.AllKeys[i])
		}
	}
	dl := rows[4]
	if dl.Key != queue.KeyDupLow || dl.Visible != 1 || dl.InFlight != 1 || dl.Delayed != 1 || dl.Total() != 3 || dl.OldestAgeSeconds == nil || *dl.OldestAgeSeconds != 42 {
		t.Errorf("dup-low row %+v", dl)
	}
	if rows[5].Error != "does not exist" || rows[0].Error != "" || rows[0].OldestAgeSeconds != nil {
		t.Errorf("rows %+v", rows)
	}
	missing.Store(false)
	rows, err = r.Read(ctx)
	if err != nil || rows[5].Error != "" {
		t.Fatalf("second read: %+v, %v", rows, err)
	}
	if opens.Load() != 8 {
		t.Errorf("%d opens, want 8 (each queue once, the missing one again)", opens.Load())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Read(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context = %v", err)
	}
}

type fakeCW struct {
	in  *cloudwatch.GetMetricStatisticsInput
	out *cloudwatch.GetMetricStatisticsOutput
	err error
}

func (f *fakeCW) GetMetricStatistics(_ context.Context, in *cloudwatch.GetMetricStatisticsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error) {
	f.in = in
	return f.out, f.err
}

func TestCloudWatchAges(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeCW{out: &cloudwatch.GetMetricStatisticsOutput{Datapoints: []cwtypes.Datapoint{
		{Timestamp: aws.Time(now.Add(-3 * time.Minute)), Maximum: aws.Float64(300)},
		{Timestamp: aws.Time(now.Add(-1 * time.Minute)), Maximum: aws.Float64(120)},
		{Timestamp: aws.Time(now.Add(-2 * time.Minute)), Maximum: aws.Float64(200)},
	}}}
	a := queuestats.CloudWatchAges{Client: f, Now: func() time.Time { return now }}
	got := a.OldestAge(context.Background(), "mill-bit")
	if got == nil || *got != 120 {
		t.Errorf("age = %v, want the latest datapoint's 120", got)
	}
	if aws.ToString(f.in.Dimensions[0].Value) != "mill-bit" || !aws.ToTime(f.in.StartTime).Equal(now.Add(-15*time.Minute)) {
		t.Errorf("request %+v", f.in)
	}
	f.out = &cloudwatch.GetMetricStatisticsOutput{}
	if got := a.OldestAge(context.Background(), "mill-bit"); got != nil {
		t.Errorf("no datapoints: age %v, want nil", *got)
	}
	f.err = errors.New("throttled")
	if got := a.OldestAge(context.Background(), "mill-bit"); got != nil {
		t.Errorf("error: age %v, want nil", *got)
	}
}

func TestReadPauses(t *testing.T) {
	ctx := context.Background()
	reg := memfleet.New(nil)
	for _, p := range []fleet.Pause{{Kind: fleet.PauseType, Name: "DUP", At: time.Now()}, {Kind: fleet.PauseQueue, Name: "p-bit", At: time.Now()}} {
		if err := reg.Pause(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	r := queuestats.New("p-", func(_ context.Context, _, name string) (queue.Queue, error) {
		return memqueue.New(name, memqueue.Config{}), nil
	}, nil).WithFleet(reg)
	rows, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range rows {
		got[row.Key] = row.Paused
	}
	want := map[string]string{
		queue.KeyAudit: "", queue.KeyDupHigh: "type DUP", queue.KeyBitReport: "",
		queue.KeyBitError: "", queue.KeyDupLow: "type DUP", queue.KeyBit: "queue", queue.KeyDeadLetter: "",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s paused %q, want %q", k, got[k], w)
		}
	}
}
