package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/lifecycle"
	"github.com/millfleet/mill/pkg/lifecycle/imdstest"
	"github.com/millfleet/mill/processors/noop"
)

// completion is one CompleteLifecycleAction call the proxy answered.
type completion struct{ group, hook, instance, result string }

// asgProxy stands in front of the emulator's Auto Scaling API. moto (5.2)
// implements Auto Scaling groups, instances and lifecycle hooks but not
// CompleteLifecycleAction (it answers 500), so the proxy answers that one
// action itself — after checking against the emulator that the group
// exists, holds the instance and has the hook, as AWS would refuse it
// otherwise — and records it; every other call goes to the emulator.
type asgProxy struct {
	t     *testing.T
	api   *autoscaling.Client
	mu    sync.Mutex
	calls []completion
}

func (p *asgProxy) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form, _ := url.ParseQuery(string(body))
	if form.Get("Action") != "CompleteLifecycleAction" {
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
		return
	}
	c := completion{form.Get("AutoScalingGroupName"), form.Get("LifecycleHookName"), form.Get("InstanceId"), form.Get("LifecycleActionResult")}
	if msg := p.check(r.Context(), c); msg != "" {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>`+msg+`</Message></Error><RequestId>stub</RequestId></ErrorResponse>`)
		return
	}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, `<CompleteLifecycleActionResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><CompleteLifecycleActionResult/><ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></CompleteLifecycleActionResponse>`)
}

// check asks the emulator whether AWS would accept c; "" when it would.
func (p *asgProxy) check(ctx context.Context, c completion) string {
	if c.result != "CONTINUE" && c.result != "ABANDON" {
		return "LifecycleActionResult must be CONTINUE or ABANDON"
	}
	hooks, err := p.api.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(c.group)})
	if err != nil {
		return "group " + c.group + ": " + err.Error()
	}
	found := false
	for _, h := range hooks.LifecycleHooks {
		found = found || aws.ToString(h.LifecycleHookName) == c.hook
	}
	if !found {
		return "no lifecycle hook " + c.hook + " in " + c.group
	}
	inst, err := p.api.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{c.instance}})
	if err != nil || len(inst.AutoScalingInstances) != 1 || aws.ToString(inst.AutoScalingInstances[0].AutoScalingGroupName) != c.group {
		return "No active Lifecycle Action found with instance ID " + c.instance
	}
	return ""
}

func (p *asgProxy) completions() []completion {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]completion(nil), p.calls...)
}

// TestAutoScalingTermination: Workman on a (stub) EC2 instance of an Auto
// Scaling group on the emulator registers with the instance and zone from
// the metadata service; when the target lifecycle state turns Terminated
// it drains as on SIGTERM (tasks in flight finish or go back, nothing is
// lost), records itself gone, completes the group's termination lifecycle
// action (CONTINUE) and exits 0.
func TestAutoScalingTermination(t *testing.T) {
	prefix, table, work := noopFleet(t)
	cfg := testenv.AWS(t)
	ctx := context.Background()
	workman, mctl := bins(t)

	// An Auto Scaling group with one instance and a termination hook.
	asg := cfg.AutoScaling()
	group, lc := prefix+"workman", prefix+"lc"
	_, err := asg.CreateLaunchConfiguration(ctx, &autoscaling.CreateLaunchConfigurationInput{
		LaunchConfigurationName: aws.String(lc), ImageId: aws.String("ami-12c6146b"), InstanceType: aws.String("t3.micro")})
	must(t, err)
	t.Cleanup(func() {
		_, _ = asg.DeleteAutoScalingGroup(context.Background(), &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(group), ForceDelete: aws.Bool(true)})
		_, _ = asg.DeleteLaunchConfiguration(context.Background(), &autoscaling.DeleteLaunchConfigurationInput{LaunchConfigurationName: aws.String(lc)})
	})
	_, err = asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(group), LaunchConfigurationName: aws.String(lc),
		MinSize: aws.Int32(1), MaxSize: aws.Int32(1), DesiredCapacity: aws.Int32(1), AvailabilityZones: []string{"us-east-1a"},
	})
	must(t, err)
	// (infra/workman.yaml creates the hook with the group; moto ignores a
	// hook specification there, so it is added on its own.)
	_, err = asg.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{
		AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String("workman-drain"),
		LifecycleTransition: aws.String("autoscaling:EC2_INSTANCE_TERMINATING"),
		HeartbeatTimeout:    aws.Int32(300), DefaultResult: aws.String("CONTINUE")})
	must(t, err)
	out, err := asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	must(t, err)
	if len(out.AutoScalingGroups) != 1 || len(out.AutoScalingGroups[0].Instances) != 1 {
		t.Fatalf("group %+v: want one instance", out.AutoScalingGroups)
	}
	instance := aws.ToString(out.AutoScalingGroups[0].Instances[0].InstanceId)

	target, err := url.Parse(testenv.Endpoint())
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := &asgProxy{t: t, api: asg}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxy.ServeHTTP(w, r, rp) }))
	t.Cleanup(srv.Close)

	md := imdstest.Start(t, map[string]string{
		lifecycle.PathInstanceID: instance, lifecycle.PathZone: "us-east-1a", lifecycle.PathTargetState: "InService",
	})

	const tasks = 40
	sendNoops(t, work, tasks)
	record := t.TempDir() + "/done"
	env := testbin.Env("MILL_FLEET_TABLE="+table, "MILL_QUEUE_PREFIX="+prefix,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT="+md.URL, "AWS_ENDPOINT_URL_AUTO_SCALING="+srv.URL)
	w := start(t, "w", workman, env, workmanArgs("w", prefix, table,
		"--queues", prefix+"noop", "--task-types", "NOOP", "--workers", "2", "--noop-sleep", "300ms", "--noop-record", record,
		"--lifecycle-hook", "workman-drain", "--lifecycle-poll", "200ms")...)

	var s fleet.Snapshot
	testbin.WaitFor(t, 60*time.Second, "worker registered with its instance and processing", func() bool {
		s = snapshot(t, mctl, env)
		r := byID(s)["w"]
		return r.InstanceID == instance && r.Zone == "us-east-1a" && r.Counts["NOOP"].Processed >= 4
	})
	md.Set(lifecycle.PathTargetState, "Terminated")
	if err := w.Wait(t, 60*time.Second); err != nil {
		t.Fatalf("workman after the termination notice: %v (want exit 0)", err)
	}
	if got := proxy.completions(); len(got) != 1 || got[0] != (completion{group, "workman-drain", instance, "CONTINUE"}) {
		t.Fatalf("CompleteLifecycleAction calls %+v, want one for %s/%s/%s", got, group, "workman-drain", instance)
	}
	if r := byID(snapshot(t, mctl, env))["w"]; r.State != fleet.StateGone {
		t.Fatalf("record after exit: %+v", r)
	}
	var drained, stopped bool
	for _, l := range w.lines(t) {
		drained = drained || l.Msg == "instance is going: draining as on SIGTERM"
		stopped = stopped || l.Msg == "workman stopped"
	}
	if !drained || !stopped {
		t.Fatalf("log: drain notice %v, clean stop %v", drained, stopped)
	}
	// Nothing lost: every task is either done or back in the queue.
	done := map[string]bool{}
	ids, err := noop.ReadRecord(record)
	must(t, err)
	for _, id := range ids {
		done[id] = true
	}
	d, err := work.Depth(ctx)
	must(t, err)
	if int64(len(done))+d.Visible+d.InFlight < tasks || d.InFlight != 0 {
		t.Fatalf("after the drain: %d done, queue %+v; want all %d accounted for, none held", len(done), d, tasks)
	}
	t.Logf("drained with %d of %d tasks done, %d back in the queue", len(done), tasks, d.Visible)
}
