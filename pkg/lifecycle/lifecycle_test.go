package lifecycle_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lifecycle"
	"github.com/millfleet/mill/pkg/lifecycle/imdstest"
)

func stubClient(t *testing.T, md map[string]string) (*imdstest.Server, *imds.Client) {
	s := imdstest.Start(t, md)
	c := imds.New(imds.Options{Endpoint: s.URL, Retryer: aws.NopRetryer{}})
	return s, c
}

func TestIdentify(t *testing.T) {
	_, c := stubClient(t, map[string]string{
		lifecycle.PathInstanceID: "i-0abc", lifecycle.PathZone: "eu-west-1b",
	})
	id, err := lifecycle.Identify(context.Background(), c, time.Second)
	if err != nil || id != (lifecycle.Identity{InstanceID: "i-0abc", Zone: "eu-west-1b"}) {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
}

// TestIdentifyOffEC2: where nothing answers, Identify gives up within its
// timeout with an error.
func TestIdentifyOffEC2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := imds.New(imds.Options{Endpoint: "http://" + ln.Addr().String(), Retryer: aws.NopRetryer{}})
	start := time.Now()
	if _, err := lifecycle.Identify(context.Background(), c, 300*time.Millisecond); err == nil {
		t.Fatal("Identify succeeded against a silent endpoint")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Identify took %v with a 300ms timeout", d)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	s, c := stubClient(t, map[string]string{lifecycle.PathTargetState: "InService"})
	if n, ok, err := lifecycle.Check(ctx, c); err != nil || ok {
		t.Fatalf("InService, no Spot notice: %+v %v %v", n, ok, err)
	}
	s.Set(lifecycle.PathSpotAction, `{"action": "terminate", "time": "2026-03-01T12:02:00Z"}`)
	n, ok, err := lifecycle.Check(ctx, c)
	if err != nil || !ok || !n.Spot || n.AutoScaling || !n.SpotTime.Equal(time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC)) {
		t.Fatalf("Spot notice: %+v %v %v", n, ok, err)
	}
	s.Set(lifecycle.PathTargetState, "Terminated")
	n, ok, err = lifecycle.Check(ctx, c)
	if err != nil || !ok || !n.AutoScaling {
		t.Fatalf("Terminated: %+v %v %v", n, ok, err)
	}
}

func TestWatchPollsUntilNotice(t *testing.T) {
	s, c := stubClient(t, map[string]string{lifecycle.PathTargetState: "InService"})
	clk := clock.NewFake(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan lifecycle.Notice, 1)
	go func() {
		n, err := lifecycle.Watch(ctx, c, clk, 5*time.Second, nil)
		if err == nil {
			got <- n
		}
		close(got)
	}()
	for range 3 { // three polls answered InService
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second)
	}
	s.Set(lifecycle.PathTargetState, "Terminated")
	// The watcher may be checking or sleeping: advance while it sleeps
	// until it reports.
	var n lifecycle.Notice
	ok := false
	for wait := true; wait; {
		select {
		case n, ok = <-got:
			wait = false
		case <-ctx.Done():
			t.Fatal("no notice")
		case <-time.After(time.Millisecond):
			if clk.Waiters() > 0 {
				clk.Advance(5 * time.Second)
			}
		}
	}
	if !ok || !n.AutoScaling {
		t.Fatalf("Watch = %+v, %v", n, ok)
	}
	if r := s.Requests(lifecycle.PathTargetState); r < 4 {
		t.Fatalf("%d polls, want at least 4", r)
	}
}

// fakeASG records CompleteLifecycleAction calls.
type fakeASG struct {
	groups map[string]string // instance → group
	calls  []autoscaling.CompleteLifecycleActionInput
}

func (f *fakeASG) CompleteLifecycleAction(_ context.Context, in *autoscaling.CompleteLifecycleActionInput, _ ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	f.calls = append(f.calls, *in)
	return &autoscaling.CompleteLifecycleActionOutput{}, nil
}

func (f *fakeASG) DescribeAutoScalingInstances(_ context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	out := &autoscaling.DescribeAutoScalingInstancesOutput{}
	for _, id := range in.InstanceIds {
		if g, ok := f.groups[id]; ok {
			out.AutoScalingInstances = append(out.AutoScalingInstances, astypes.AutoScalingInstanceDetails{InstanceId: aws.String(id), AutoScalingGroupName: aws.String(g)})
		}
	}
	return out, nil
}

func TestCompleteLooksUpTheGroup(t *testing.T) {
	f := &fakeASG{groups: map[string]string{"i-1": "mill-workman"}}
	ctx := context.Background()
	if err := lifecycle.Complete(ctx, f, "", "workman-drain", "i-1"); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || aws.ToString(f.calls[0].AutoScalingGroupName) != "mill-workman" ||
		aws.ToString(f.calls[0].LifecycleHookName) != "workman-drain" || aws.ToString(f.calls[0].InstanceId) != "i-1" ||
		aws.ToString(f.calls[0].LifecycleActionResult) != "CONTINUE" {
		t.Fatalf("calls %+v", f.calls)
	}
	if err := lifecycle.Complete(ctx, f, "", "workman-drain", "i-other"); err == nil {
		t.Fatal("an instance in no group was completed")
	}
	if err := lifecycle.Complete(ctx, f, "g", "", "i-1"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatal("no hook name accepted")
	}
}
