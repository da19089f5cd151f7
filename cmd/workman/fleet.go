package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/buildinfo"
	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/lifecycle"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/pkg/workman/fleetmember"
)

// fleetOptions are the flags of the fleet registry and the instance
// lifecycle.
type fleetOptions struct {
	table            string
	interval         time.Duration
	instanceMetadata bool
	lifecyclePoll    time.Duration
	hook             string
	group            string
}

func fleetFlags(fs *flag.FlagSet) *fleetOptions {
	o := &fleetOptions{}
	fs.StringVar(&o.table, "fleet-table", fleet.DefaultTable, "DynamoDB `table` of the fleet registry: heartbeats and fleet-wide pauses (empty: not registered,\nno pauses read)")
	fs.DurationVar(&o.interval, "heartbeat-interval", fleet.DefaultInterval, "how often this worker writes its heartbeat and reads the pauses (a pause takes effect\nwithin one interval; a worker silent for three is shown as lost)")
	fs.BoolVar(&o.instanceMetadata, "instance-metadata", true, "on EC2, read the instance metadata service: instance and zone for the registry, and\nAuto Scaling termination and Spot interruption notices, on which workman drains as on\nSIGTERM (off EC2 it does not answer and nothing is watched)")
	fs.DurationVar(&o.lifecyclePoll, "lifecycle-poll", lifecycle.DefaultPoll, "how often the termination notices are checked")
	fs.StringVar(&o.hook, "lifecycle-hook", "", "Auto Scaling termination lifecycle hook to complete (CONTINUE) once drained after an\nAuto Scaling termination notice (empty: none; the hook then times out)")
	fs.StringVar(&o.group, "autoscaling-group", "", "the instance's Auto Scaling `group` for --lifecycle-hook (empty: looked up)")
	return o
}

// newMember returns this worker's fleet member, or nil when the registry
// is off.
func newMember(o *fleetOptions, awsCfg *awsconfig.Config, workerID, prefix string, queues []string, pool int, logger *slog.Logger) (*fleetmember.Member, error) {
	if o.table == "" {
		return nil, nil
	}
	return fleetmember.New(fleetmember.Config{
		Registry: dynamofleet.New(awsCfg.DynamoDB(), o.table, nil), QueuePrefix: prefix, Interval: o.interval, Logger: logger,
		Self: fleet.Worker{ID: workerID, Identity: process.Self(time.Now()), Version: buildinfo.Version(), Queues: queues, Pool: pool},
	})
}

// watchInstance reads the instance's identity (giving it to member) and
// then watches for a termination notice, which it sends on notices. Off
// EC2 it logs that at debug level and returns.
func watchInstance(ctx context.Context, o *fleetOptions, md lifecycle.MetadataAPI, member *fleetmember.Member, logger *slog.Logger, notices chan<- lifecycle.Notice) {
	id, err := lifecycle.Identify(ctx, md, lifecycle.DefaultIdentifyTTL)
	if err != nil {
		logger.Debug("no instance metadata (not on EC2?): no termination notices are watched", "error", err)
		return
	}
	logger.Info("on EC2: watching for Auto Scaling termination and Spot interruption notices", "instance_id", id.InstanceID, "zone", id.Zone, "every", o.lifecyclePoll)
	if member != nil {
		member.SetIdentity(id.InstanceID, id.Zone)
	}
	n, err := lifecycle.Watch(ctx, md, nil, o.lifecyclePoll, logger)
	if err != nil {
		return
	}
	logger.Warn("instance is going: draining as on SIGTERM", "notice", n.Detail, "instance_id", id.InstanceID)
	select {
	case notices <- n:
	case <-ctx.Done():
	}
}

// completeLifecycle completes the termination lifecycle action after a
// drain the Auto Scaling notice started (or a Spot notice, when the group
// is terminating the instance by now).
func completeLifecycle(ctx context.Context, o *fleetOptions, awsCfg *awsconfig.Config, md lifecycle.MetadataAPI, n lifecycle.Notice, logger *slog.Logger) {
	if o.hook == "" {
		return
	}
	if !n.AutoScaling {
		again, ok, err := lifecycle.Check(ctx, md)
		if err != nil || !ok || !again.AutoScaling {
			return
		}
	}
	id, err := lifecycle.Identify(ctx, md, lifecycle.DefaultIdentifyTTL)
	if err == nil {
		err = lifecycle.Complete(ctx, awsCfg.AutoScaling(), o.group, o.hook, id.InstanceID)
	}
	if err != nil {
		logger.Error("could not complete the termination lifecycle action; the instance goes when the hook times out", "hook", o.hook, "error", err)
		return
	}
	logger.Info("termination lifecycle action completed", "hook", o.hook, "instance_id", id.InstanceID)
}

// fleetOutages is the manager's open circuits as the registry records them.
func fleetOutages(os []workman.Outage) []fleet.Outage {
	var out []fleet.Outage
	for _, o := range os {
		fo := fleet.Outage{Dependency: o.Dependency, Since: o.Since, Cause: o.Cause}
		for _, t := range o.Types {
			fo.Types = append(fo.Types, string(t))
		}
		out = append(out, fo)
	}
	return out
}
