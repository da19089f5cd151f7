// Package setup creates Mill's AWS resources and database schema,
// idempotently (docs/ARCHITECTURE.md, Operations): the seven SQS queues with
// their redrive policies, the config, state and reports buckets, the
// audit-log, lease and fleet tables, and the PostgreSQL migrations. `millctl setup`
// is a thin command over it.
//
// Every resource implements Resource: Plan inspects what exists and says
// what would change, without changing anything; Apply makes it so. Plan and
// Apply run a list of resources in order (the dead-letter queue comes before
// the queues that redrive to it) and report one Result per resource:
// created, exists, or updated. Settings an endpoint does not implement
// (a local emulator answering NotImplemented for, say, bucket versioning) are
// reported as notes on the Result; any other error fails the resource.
//
// With Config.EvidenceBucket, setup also creates the evidence log's bucket
// with S3 Object Lock in compliance mode and a default retention
// (objectlock.go): a Bucket with a Lock, whose lock is required, never a
// note. In production the bucket belongs in a stack of its own
// (infra/evidence.yaml), owned apart from the main stack.
//
// The list is open: other resource kinds (the CloudWatch alarms of
// internal/ops/alarms behind `millctl setup --alarms`, the store buckets'
// event notifications behind --store-notifications: NotificationResources,
// over pkg/s3event) are further Resources appended to the list, with no
// change to Plan or Apply.
package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Action is what Plan found a resource needs.
type Action string

// Actions.
const (
	ActionNone   Action = "none"   // exists as wanted
	ActionCreate Action = "create" // does not exist
	ActionUpdate Action = "update" // exists, but some settings differ
)

// Change is the outcome of Resource.Plan.
type Change struct {
	Action Action
	// Reasons says what would be created or which settings differ
	// ("redrive policy: maxReceiveCount 3 → 10").
	Reasons []string
	// Notes are optional settings that could not be checked (the endpoint
	// does not implement them).
	Notes []string
}

// Resource is one thing setup manages.
type Resource interface {
	// Kind is "queue", "bucket", "table", "database", … .
	Kind() string
	// Name identifies the resource within its kind.
	Name() string
	// Plan inspects the resource and reports what Apply would do. It must
	// not change anything.
	Plan(ctx context.Context) (Change, error)
	// Apply carries out c, the Change its Plan just returned (never called
	// with ActionNone), and describes what it did.
	Apply(ctx context.Context, c Change) (Result, error)
}

// Status of a resource after Apply, or, in a plan, what Apply would do.
type Status string

// Statuses.
const (
	StatusCreated     Status = "created"
	StatusUpdated     Status = "updated"
	StatusExists      Status = "exists"
	StatusWouldCreate Status = "would create"
	StatusWouldUpdate Status = "would update"
	StatusFailed      Status = "failed"
)

// Result is what happened to one resource.
type Result struct {
	Kind, Name string
	Status     Status
	// Details say what was created or changed.
	Details []string
	// Notes are optional settings that were skipped because the endpoint
	// does not implement them.
	Notes []string
	// Err is set when Status is StatusFailed.
	Err error
}

// String is the one-line report, followed by a line per note:
//
//	queue     mill-audit                  created: visibility 5m0s; redrive to mill-dead-letter after 10 receives
//	  note: ...
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-30s %s", r.Kind, r.Name, r.Status)
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, ": %v", r.Err)
	case len(r.Details) > 0:
		b.WriteString(": " + strings.Join(r.Details, "; "))
	}
	for _, n := range r.Notes {
		b.WriteString("\n  note: " + n)
	}
	return b.String()
}

// Summary counts the results of a Plan or Apply.
type Summary struct {
	DryRun                            bool
	Created, Updated, Existed, Failed int
	Results                           []Result
}

func (s *Summary) add(r Result) {
	s.Results = append(s.Results, r)
	switch r.Status {
	case StatusCreated, StatusWouldCreate:
		s.Created++
	case StatusUpdated, StatusWouldUpdate:
		s.Updated++
	case StatusExists:
		s.Existed++
	case StatusFailed:
		s.Failed++
	}
}

// Changed reports whether anything was (or, in a plan, would be) created or
// updated.
func (s Summary) Changed() bool { return s.Created+s.Updated > 0 }

// String is the final line of a run:
//
//	setup: 13 created, 0 updated, 0 already existed
//	setup: 0 created, 13 already existed — nothing to do
//	setup (dry run): 2 to create, 1 to update, 10 already exist — nothing was changed
func (s Summary) String() string {
	var line string
	switch {
	case s.DryRun:
		line = fmt.Sprintf("setup (dry run): %d to create, %d to update, %d already exist", s.Created, s.Updated, s.Existed)
	case !s.Changed() && s.Failed == 0:
		line = fmt.Sprintf("setup: 0 created, %d already existed — nothing to do", s.Existed)
	default:
		line = fmt.Sprintf("setup: %d created, %d updated, %d already existed", s.Created, s.Updated, s.Existed)
	}
	if s.Failed > 0 {
		line += fmt.Sprintf(", %d failed", s.Failed)
	}
	if s.DryRun {
		line += " — nothing was changed"
	}
	return line
}

// Plan reports what Apply would do to each resource, changing nothing.
// report (may be nil) is called with each Result as it is known. A resource
// whose inspection fails is reported as failed and the others still run;
// the returned error joins every failure.
func Plan(ctx context.Context, rs []Resource, report func(Result)) (Summary, error) {
	return run(ctx, rs, report, true)
}

// Apply brings every resource to its wanted state, in order, reporting each
// Result as it goes (report may be nil). A failed resource does not stop the
// others; the returned error joins every failure.
func Apply(ctx context.Context, rs []Resource, report func(Result)) (Summary, error) {
	return run(ctx, rs, report, false)
}

func run(ctx context.Context, rs []Resource, report func(Result), dryRun bool) (Summary, error) {
	s := Summary{DryRun: dryRun}
	var errs []error
	for _, r := range rs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		res := one(ctx, r, dryRun)
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", r.Kind(), r.Name(), res.Err))
		}
		s.add(res)
		if report != nil {
			report(res)
		}
	}
	return s, errors.Join(errs...)
}

func one(ctx context.Context, r Resource, dryRun bool) Result {
	base := Result{Kind: r.Kind(), Name: r.Name()}
	c, err := r.Plan(ctx)
	if err != nil {
		base.Status, base.Err = StatusFailed, err
		return base
	}
	base.Notes = c.Notes
	switch {
	case c.Action == ActionNone:
		base.Status = StatusExists
		return base
	case dryRun:
		base.Status, base.Details = StatusWouldUpdate, c.Reasons
		if c.Action == ActionCreate {
			base.Status = StatusWouldCreate
		}
		return base
	}
	res, err := r.Apply(ctx, c)
	res.Kind, res.Name = r.Kind(), r.Name()
	res.Notes = append(append([]string{}, c.Notes...), res.Notes...)
	if err != nil {
		res.Status, res.Err = StatusFailed, err
	}
	return res
}
