// Package lifecycle is what a Workman on EC2 learns from the instance
// metadata service (IMDS) and tells Auto Scaling (docs/ARCHITECTURE.md,
// Operations): which instance and availability zone it runs on, when the
// instance is about to go (an Auto Scaling termination — the target
// lifecycle state Terminated — or a Spot interruption notice), and, once
// Workman has drained, that the group's termination lifecycle action may
// continue.
//
// Off EC2 the metadata service does not answer: Identify reports that
// within a short timeout and Workman runs without a watcher. In tests a
// local stub serves the metadata paths (the SDK's IMDS client takes its
// endpoint from AWS_EC2_METADATA_SERVICE_ENDPOINT).
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/millfleet/mill/pkg/clock"
)

// Metadata paths (under /latest/meta-data/).
const (
	PathInstanceID     = "instance-id"
	PathZone           = "placement/availability-zone"
	PathTargetState    = "autoscaling/target-lifecycle-state"
	PathSpotAction     = "spot/instance-action"
	StateTerminated    = "Terminated"
	DefaultPoll        = 5 * time.Second
	DefaultIdentifyTTL = 2 * time.Second
)

// MetadataAPI is the part of the IMDS client the package uses.
type MetadataAPI interface {
	GetMetadata(ctx context.Context, in *imds.GetMetadataInput, optFns ...func(*imds.Options)) (*imds.GetMetadataOutput, error)
}

var _ MetadataAPI = (*imds.Client)(nil)

// NewMetadataClient returns an IMDS client for cfg that gives up quickly:
// one attempt per call (the caller bounds it with a context timeout and
// polls again later). The endpoint is the SDK's: 169.254.169.254, or
// AWS_EC2_METADATA_SERVICE_ENDPOINT.
func NewMetadataClient(cfg aws.Config) *imds.Client {
	return imds.NewFromConfig(cfg, func(o *imds.Options) {
		o.Retryer = aws.NopRetryer{}
	})
}

// get reads one metadata path; found is false when the service answered
// 404 (the path does not exist now, e.g. no Spot notice).
func get(ctx context.Context, api MetadataAPI, path string) (value string, found bool, err error) {
	out, err := api.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
			return "", false, nil
		}
		return "", false, fmt.Errorf("instance metadata %s: %w", path, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 64<<10))
	if err != nil {
		return "", false, fmt.Errorf("instance metadata %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// Identity is the EC2 instance a process runs on.
type Identity struct {
	InstanceID string
	Zone       string
}

// Identify reads the instance ID and availability zone, giving up after
// timeout (DefaultIdentifyTTL when 0). An error means the metadata service
// did not answer: the process is not on EC2 (or IMDS is off), and there is
// nothing to watch.
func Identify(ctx context.Context, api MetadataAPI, timeout time.Duration) (Identity, error) {
	if timeout <= 0 {
		timeout = DefaultIdentifyTTL
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id, ok, err := get(ctx, api, PathInstanceID)
	if err == nil && (!ok || id == "") {
		err = errors.New("instance metadata: no instance ID")
	}
	if err != nil {
		return Identity{}, err
	}
	zone, _, err := get(ctx, api, PathZone)
	if err != nil {
		return Identity{}, err
	}
	return Identity{InstanceID: id, Zone: zone}, nil
}

// Notice says the instance is about to go.
type Notice struct {
	// AutoScaling is set when the group is terminating the instance (the
	// target lifecycle state is Terminated): a termination lifecycle
	// action may be waiting for Complete.
	AutoScaling bool
	// Spot is set when EC2 will interrupt the Spot instance at SpotTime.
	Spot     bool
	SpotTime time.Time
	// Detail describes the notice for logs and the fleet registry.
	Detail string
}

// Check reads both notices once.
func Check(ctx context.Context, api MetadataAPI) (Notice, bool, error) {
	state, _, err := get(ctx, api, PathTargetState)
	if err != nil {
		return Notice{}, false, err
	}
	if state == StateTerminated {
		return Notice{AutoScaling: true, Detail: "Auto Scaling termination (target lifecycle state Terminated)"}, true, nil
	}
	spot, found, err := get(ctx, api, PathSpotAction)
	if err != nil {
		return Notice{}, false, err
	}
	if !found || spot == "" {
		return Notice{}, false, nil
	}
	n := Notice{Spot: true, Detail: "Spot interruption: " + spot}
	var action struct {
		Time time.Time `json:"time"`
	}
	if json.Unmarshal([]byte(spot), &action) == nil {
		n.SpotTime = action.Time
	}
	return n, true, nil
}

// Watch checks every poll interval (DefaultPoll when 0) until a notice
// appears and returns it, or returns ctx's error. A failed check is logged
// (once until one works) and tried again at the next interval.
func Watch(ctx context.Context, api MetadataAPI, clk clock.Clock, poll time.Duration, log *slog.Logger) (Notice, error) {
	clk = clock.Or(clk)
	if poll <= 0 {
		poll = DefaultPoll
	}
	if log == nil {
		log = slog.Default()
	}
	failing := false
	for {
		cctx, cancel := context.WithTimeout(ctx, poll)
		n, ok, err := Check(cctx, api)
		cancel()
		switch {
		case ok:
			return n, nil
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			log.Warn("instance metadata check failed; trying again", "error", err, "every", poll)
		case err == nil && failing:
			failing = false
			log.Info("instance metadata answers again")
		}
		if err := clock.Sleep(ctx, clk, poll); err != nil {
			return Notice{}, err
		}
	}
}

// AutoScalingAPI is the part of the Auto Scaling client Complete uses.
type AutoScalingAPI interface {
	CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, optFns ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, optFns ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
}

var _ AutoScalingAPI = (*autoscaling.Client)(nil)

// Complete tells Auto Scaling that the instance's termination lifecycle
// action (hook) may CONTINUE, so the instance goes now rather than when the
// hook times out. group may be empty: it is then looked up
// (DescribeAutoScalingInstances). The SDK retries transient errors.
func Complete(ctx context.Context, api AutoScalingAPI, group, hook, instanceID string) error {
	if hook == "" || instanceID == "" {
		return errors.New("lifecycle: complete: a hook name and an instance ID are required")
	}
	if group == "" {
		out, err := api.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{instanceID}})
		if err != nil {
			return fmt.Errorf("lifecycle: find the Auto Scaling group of %s: %w", instanceID, err)
		}
		if len(out.AutoScalingInstances) == 0 {
			return fmt.Errorf("lifecycle: instance %s is in no Auto Scaling group", instanceID)
		}
		group = aws.ToString(out.AutoScalingInstances[0].AutoScalingGroupName)
	}
	_, err := api.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{
		AutoScalingGroupName:  aws.String(group),
		LifecycleHookName:     aws.String(hook),
		InstanceId:            aws.String(instanceID),
		LifecycleActionResult: aws.String("CONTINUE"),
	})
	if err != nil {
		return fmt.Errorf("lifecycle: complete %s of %s in %s: %w", hook, instanceID, group, err)
	}
	return nil
}
