package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/pkg/s3event"
)

// EventQueueAPI is the part of *sqs.Client the notification setup uses.
type EventQueueAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(context.Context, *sqs.SetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

// EventBucket is one store bucket whose object events should reach the audit
// queue, with the S3 client that may configure it (the store's own region,
// endpoint and role).
type EventBucket struct {
	Name   string
	Client s3event.NotificationAPI
}

// NotificationResources returns the `millctl setup` resources that make
// buckets send their s3:ObjectCreated:* and s3:ObjectRemoved:* events to the
// audit queue auditQueue: first the queue's policy (S3 must be allowed to
// send before a bucket may name the queue), then one resource per bucket.
// Each is idempotent: Plan compares what is configured with what is wanted.
func NotificationResources(api EventQueueAPI, auditQueue string, buckets []EventBucket) []Resource {
	q := &auditQueueRef{api: api, name: auditQueue}
	names := make([]string, 0, len(buckets))
	for _, b := range buckets {
		names = append(names, b.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	rs := []Resource{&queuePolicy{q: q, buckets: names}}
	for _, b := range buckets {
		rs = append(rs, &bucketNotification{q: q, bucket: b})
	}
	return rs
}

// auditQueueRef resolves the audit queue's URL and ARN once they exist.
type auditQueueRef struct {
	api       EventQueueAPI
	name      string
	url, arn  string
	policyNow string
}

// resolve returns false (and no error) when the queue does not exist yet.
func (q *auditQueueRef) resolve(ctx context.Context) (bool, error) {
	if q.arn != "" {
		return true, nil
	}
	u, err := q.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
	if err != nil {
		var ne *sqstypes.QueueDoesNotExist
		if errors.As(err, &ne) {
			return false, nil
		}
		return false, fmt.Errorf("s3event: audit queue %s: %w", q.name, err)
	}
	attrs, err := q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNamePolicy},
	})
	if err != nil {
		return false, fmt.Errorf("s3event: audit queue %s attributes: %w", q.name, err)
	}
	q.url, q.arn = aws.ToString(u.QueueUrl), attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	q.policyNow = attrs.Attributes[string(sqstypes.QueueAttributeNamePolicy)]
	return true, nil
}

// account returns the AWS account id in an ARN (arn:aws:sqs:region:account:name).
func account(arn string) string {
	if p := strings.Split(arn, ":"); len(p) >= 6 {
		return p[4]
	}
	return ""
}

type queuePolicy struct {
	q       *auditQueueRef
	buckets []string
}

func (r *queuePolicy) Kind() string { return "policy" }
func (r *queuePolicy) Name() string { return r.q.name }

func (r *queuePolicy) Plan(ctx context.Context) (Change, error) {
	ok, err := r.q.resolve(ctx)
	if err != nil {
		return Change{}, err
	}
	if !ok {
		return Change{Action: ActionCreate, Reasons: []string{fmt.Sprintf("S3 may send events of %d buckets (the queue is created first)", len(r.buckets))}}, nil
	}
	want, err := s3event.QueuePolicy(r.q.arn, account(r.q.arn), r.buckets...)
	if err != nil {
		return Change{}, err
	}
	if r.q.policyNow == "" {
		return Change{Action: ActionCreate, Reasons: []string{fmt.Sprintf("S3 may send events of %d buckets", len(r.buckets))}}, nil
	}
	if !sameJSON(r.q.policyNow, want) {
		return Change{Action: ActionUpdate, Reasons: []string{"queue policy differs: S3 may send events of " + strings.Join(r.buckets, ", ")}}, nil
	}
	return Change{Action: ActionNone}, nil
}

func (r *queuePolicy) Apply(ctx context.Context, c Change) (Result, error) {
	if ok, err := r.q.resolve(ctx); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("s3event: audit queue %s does not exist", r.q.name)
		}
		return Result{}, err
	}
	want, err := s3event.QueuePolicy(r.q.arn, account(r.q.arn), r.buckets...)
	if err != nil {
		return Result{}, err
	}
	if _, err := r.q.api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(r.q.url),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNamePolicy): want},
	}); err != nil {
		return Result{}, fmt.Errorf("s3event: set policy of %s: %w", r.q.name, err)
	}
	r.q.policyNow = want
	st := StatusCreated
	if c.Action == ActionUpdate {
		st = StatusUpdated
	}
	return Result{Status: st, Details: c.Reasons}, nil
}

type bucketNotification struct {
	q      *auditQueueRef
	bucket EventBucket
}

func (r *bucketNotification) Kind() string { return "events" }
func (r *bucketNotification) Name() string { return r.bucket.Name }

var wantEvents = []string{"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}

func (r *bucketNotification) Plan(ctx context.Context) (Change, error) {
	ok, err := r.q.resolve(ctx)
	if err != nil {
		return Change{}, err
	}
	reason := "object created/removed events → " + r.q.name
	if !ok {
		return Change{Action: ActionCreate, Reasons: []string{reason}}, nil
	}
	cur, err := r.bucket.Client.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(r.bucket.Name)})
	if err != nil {
		return Change{}, fmt.Errorf("s3event: notifications of bucket %s: %w", r.bucket.Name, err)
	}
	for _, qc := range cur.QueueConfigurations {
		if aws.ToString(qc.Id) != s3event.NotificationID {
			continue
		}
		var evs []string
		for _, e := range qc.Events {
			evs = append(evs, string(e))
		}
		slices.Sort(evs)
		if aws.ToString(qc.QueueArn) == r.q.arn && slices.Equal(evs, wantEvents) {
			return Change{Action: ActionNone}, nil
		}
		return Change{Action: ActionUpdate, Reasons: []string{reason}}, nil
	}
	return Change{Action: ActionCreate, Reasons: []string{reason}}, nil
}

func (r *bucketNotification) Apply(ctx context.Context, c Change) (Result, error) {
	if ok, err := r.q.resolve(ctx); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("s3event: audit queue %s does not exist", r.q.name)
		}
		return Result{}, err
	}
	if err := s3event.ConfigureBucketNotifications(ctx, r.bucket.Client, r.bucket.Name, r.q.arn); err != nil {
		return Result{}, err
	}
	st := StatusCreated
	if c.Action == ActionUpdate {
		st = StatusUpdated
	}
	return Result{Status: st, Details: c.Reasons}, nil
}

// sameJSON reports whether two JSON documents are equal as values.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}
