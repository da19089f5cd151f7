package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/base/defaults"
)

// SQS attribute names setup manages.
const (
	attrVisibility = string(sqstypes.QueueAttributeNameVisibilityTimeout)
	attrRetention  = string(sqstypes.QueueAttributeNameMessageRetentionPeriod)
	attrRedrive    = string(sqstypes.QueueAttributeNameRedrivePolicy)
	attrSSE        = string(sqstypes.QueueAttributeNameSqsManagedSseEnabled)
	attrKMS        = string(sqstypes.QueueAttributeNameKmsMasterKeyId)
	attrArn        = string(sqstypes.QueueAttributeNameQueueArn)
)

// Queue is one SQS standard queue with SQS-managed encryption, a visibility
// timeout, a retention period and, for work queues, a redrive policy to the
// dead-letter queue.
type Queue struct {
	Client            SQSAPI
	QueueName         string
	VisibilityTimeout time.Duration
	Retention         time.Duration
	// DeadLetter names the queue to redrive to after MaxReceiveCount
	// receives; empty for the dead-letter queue itself. It must be set up
	// before this queue (Resources orders them so).
	DeadLetter      string
	MaxReceiveCount int
}

// Kind implements Resource.
func (q *Queue) Kind() string { return "queue" }

// Name implements Resource.
func (q *Queue) Name() string { return q.QueueName }

// RedrivePolicy is the JSON of SQS's RedrivePolicy attribute.
type RedrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// ParseRedrivePolicy reads the attribute; maxReceiveCount may be a JSON
// number or a string (SQS accepts and emulators return both).
func ParseRedrivePolicy(s string) (RedrivePolicy, error) {
	var raw struct {
		Arn   string          `json:"deadLetterTargetArn"`
		Count json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return RedrivePolicy{}, fmt.Errorf("redrive policy %q: %w", s, err)
	}
	n, err := strconv.Atoi(strings.Trim(string(raw.Count), `"`))
	if err != nil {
		return RedrivePolicy{}, fmt.Errorf("redrive policy %q: maxReceiveCount: %w", s, err)
	}
	return RedrivePolicy{DeadLetterTargetArn: raw.Arn, MaxReceiveCount: n}, nil
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// wanted returns the attributes the queue should have; dlqArn is empty when
// the dead-letter queue does not exist yet.
func (q *Queue) wanted(dlqArn string) map[string]string {
	a := map[string]string{
		attrVisibility: seconds(q.VisibilityTimeout),
		attrRetention:  seconds(q.Retention),
		attrSSE:        "true",
	}
	if q.DeadLetter != "" && dlqArn != "" {
		b, _ := json.Marshal(RedrivePolicy{DeadLetterTargetArn: dlqArn, MaxReceiveCount: q.MaxReceiveCount})
		a[attrRedrive] = string(b)
	}
	return a
}

func (q *Queue) describe() []string {
	d := []string{fmt.Sprintf("visibility %v, retention %v, SSE", q.VisibilityTimeout, q.Retention)}
	if q.DeadLetter != "" {
		d = append(d, fmt.Sprintf("redrive to %s after %d receives", q.DeadLetter, q.MaxReceiveCount))
	}
	return d
}

// lookup returns the queue's URL, or "" when it does not exist.
func lookup(ctx context.Context, c SQSAPI, name string) (string, error) {
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		var nf *sqstypes.QueueDoesNotExist
		if errors.As(err, &nf) || errorCode(err) == "AWS.SimpleQueueService.NonExistentQueue" {
			return "", nil
		}
		return "", fmt.Errorf("get queue URL of %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func (q *Queue) attributes(ctx context.Context, url string) (map[string]string, error) {
	out, err := q.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("get attributes of %s: %w", q.QueueName, err)
	}
	return out.Attributes, nil
}

// deadLetterArn returns the ARN of the dead-letter queue, "" if it does not
// exist yet.
func (q *Queue) deadLetterArn(ctx context.Context) (string, error) {
	url, err := lookup(ctx, q.Client, q.DeadLetter)
	if err != nil || url == "" {
		return "", err
	}
	out, err := q.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("get ARN of %s: %w", q.DeadLetter, err)
	}
	arn := out.Attributes[attrArn]
	if arn == "" {
		return "", fmt.Errorf("dead-letter queue %s reported no ARN", q.DeadLetter)
	}
	return arn, nil
}

// diff compares have with the wanted attributes and returns the attributes
// to set, the reasons, and notes.
func (q *Queue) diff(have map[string]string, dlqArn string) (set map[string]string, reasons, notes []string, err error) {
	want := q.wanted(dlqArn)
	set = map[string]string{}
	for _, k := range []string{attrVisibility, attrRetention} {
		if have[k] != want[k] {
			set[k] = want[k]
			reasons = append(reasons, fmt.Sprintf("%s %ss → %ss", k, have[k], want[k]))
		}
	}
	switch sse, reported := have[attrSSE]; {
	case have[attrKMS] != "":
		// Encrypted with a KMS key chosen by the operator: leave it.
	case !reported:
		notes = append(notes, "the endpoint does not report SqsManagedSseEnabled; encryption not checked")
	case sse != "true":
		set[attrSSE] = "true"
		reasons = append(reasons, "SQS-managed encryption off → on")
	}
	if q.DeadLetter == "" {
		return set, reasons, notes, nil
	}
	if dlqArn == "" {
		reasons = append(reasons, fmt.Sprintf("redrive policy: dead-letter queue %s does not exist yet", q.DeadLetter))
		return set, reasons, notes, nil
	}
	cur := RedrivePolicy{}
	if s := have[attrRedrive]; s != "" {
		if cur, err = ParseRedrivePolicy(s); err != nil {
			return nil, nil, nil, err
		}
	}
	if cur.DeadLetterTargetArn != dlqArn || cur.MaxReceiveCount != q.MaxReceiveCount {
		set[attrRedrive] = want[attrRedrive]
		if cur.DeadLetterTargetArn == "" {
			reasons = append(reasons, "redrive policy: none → "+q.DeadLetter)
		} else {
			reasons = append(reasons, fmt.Sprintf("redrive policy: %s after %d → %s after %d", cur.DeadLetterTargetArn, cur.MaxReceiveCount, dlqArn, q.MaxReceiveCount))
		}
	}
	return set, reasons, notes, nil
}

// Plan implements Resource.
func (q *Queue) Plan(ctx context.Context) (Change, error) {
	url, err := lookup(ctx, q.Client, q.QueueName)
	if err != nil {
		return Change{}, err
	}
	if url == "" {
		return Change{Action: ActionCreate, Reasons: q.describe()}, nil
	}
	have, err := q.attributes(ctx, url)
	if err != nil {
		return Change{}, err
	}
	dlqArn := ""
	if q.DeadLetter != "" {
		if dlqArn, err = q.deadLetterArn(ctx); err != nil {
			return Change{}, err
		}
	}
	_, reasons, notes, err := q.diff(have, dlqArn)
	if err != nil {
		return Change{}, err
	}
	if len(reasons) == 0 {
		return Change{Action: ActionNone, Notes: notes}, nil
	}
	return Change{Action: ActionUpdate, Reasons: reasons, Notes: notes}, nil
}

// Apply implements Resource. The wanted state is recomputed here (the
// dead-letter queue may have been created since Plan).
func (q *Queue) Apply(ctx context.Context, c Change) (Result, error) {
	dlqArn := ""
	if q.DeadLetter != "" {
		var err error
		if dlqArn, err = q.deadLetterArn(ctx); err != nil {
			return Result{}, err
		}
		if dlqArn == "" {
			return Result{}, fmt.Errorf("dead-letter queue %s does not exist: set it up first", q.DeadLetter)
		}
	}
	url, err := lookup(ctx, q.Client, q.QueueName)
	if err != nil {
		return Result{}, err
	}
	if url == "" {
		return q.create(ctx, dlqArn)
	}
	have, err := q.attributes(ctx, url)
	if err != nil {
		return Result{}, err
	}
	set, reasons, notes, err := q.diff(have, dlqArn)
	if err != nil {
		return Result{}, err
	}
	if len(set) == 0 {
		return Result{Status: StatusExists, Notes: notes}, nil
	}
	if _, err := q.Client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: set}); err != nil {
		return Result{}, fmt.Errorf("set attributes of %s: %w", q.QueueName, err)
	}
	return Result{Status: StatusUpdated, Details: reasons, Notes: notes}, nil
}

func (q *Queue) create(ctx context.Context, dlqArn string) (Result, error) {
	attrs := q.wanted(dlqArn)
	var notes []string
	_, err := q.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.QueueName), Attributes: attrs})
	var bad *sqstypes.InvalidAttributeName
	if err != nil && (errors.As(err, &bad) || notImplemented(err)) && strings.Contains(err.Error(), attrSSE) {
		// An endpoint without SQS-managed encryption: the queue is still
		// worth having; say so rather than fail.
		delete(attrs, attrSSE)
		notes = append(notes, "the endpoint rejected SqsManagedSseEnabled; queue created without SQS-managed encryption")
		_, err = q.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.QueueName), Attributes: attrs})
	}
	if err != nil {
		// A queue created concurrently with the same attributes is returned
		// by CreateQueue; one with different attributes is QueueNameExists,
		// which a second run of setup repairs.
		return Result{}, fmt.Errorf("create queue %s: %w", q.QueueName, err)
	}
	return Result{Status: StatusCreated, Details: q.describe(), Notes: notes}, nil
}

// Ensure sets q up now — creates it, or converges an existing queue to q's
// attributes — and returns its URL: Apply without a Plan, for a caller that
// needs one queue (tests, tools). Zero VisibilityTimeout, Retention and
// (with DeadLetter set) MaxReceiveCount take Config's defaults.
func (q Queue) Ensure(ctx context.Context) (url string, err error) {
	defaults.Fill(&q, Queue{VisibilityTimeout: DefaultVisibilityTimeout, Retention: DefaultWorkRetention})
	if q.DeadLetter != "" && q.MaxReceiveCount == 0 {
		q.MaxReceiveCount = DefaultMaxReceiveCount
	}
	if _, err := q.Apply(ctx, Change{}); err != nil {
		return "", err
	}
	url, err = lookup(ctx, q.Client, q.QueueName)
	if err == nil && url == "" {
		err = fmt.Errorf("queue %s: not found after it was set up", q.QueueName)
	}
	return url, err
}
