package sqsqueue

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
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/pkg/queue"
)

// EnsureAPI is the part of *sqs.Client Ensure uses.
type EnsureAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	SetQueueAttributes(context.Context, *sqs.SetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

var _ EnsureAPI = (*sqs.Client)(nil)

// DefaultMaxReceiveCount is the redrive limit Ensure uses when RedriveTo is
// set and MaxReceiveCount is not (docs/ARCHITECTURE.md, Queues).
const DefaultMaxReceiveCount = 10

// EnsureConfig is the queue Ensure makes. Zero fields leave SQS's defaults
// (or, for an existing queue, its current values) alone.
type EnsureConfig struct {
	// VisibilityTimeout, in whole seconds (0..queue.MaxVisibility).
	VisibilityTimeout time.Duration
	// RedriveTo is the dead-letter queue, by ARN ("arn:…") or by name
	// (which must exist). Empty = no redrive policy.
	RedriveTo string
	// MaxReceiveCount of the redrive policy (default
	// DefaultMaxReceiveCount when RedriveTo is set).
	MaxReceiveCount int
	// SSE turns on SQS-managed server-side encryption.
	SSE bool
	// MessageRetention, in whole seconds (SQS allows 1 min..14 days).
	MessageRetention time.Duration
}

func (c EnsureConfig) validate() error {
	var errs []error
	if c.VisibilityTimeout < 0 || c.VisibilityTimeout > queue.MaxVisibility {
		errs = append(errs, fmt.Errorf("visibility timeout %v outside 0..%v", c.VisibilityTimeout, queue.MaxVisibility))
	}
	if c.MaxReceiveCount < 0 {
		errs = append(errs, fmt.Errorf("max receive count %d < 0", c.MaxReceiveCount))
	}
	if c.MaxReceiveCount > 0 && c.RedriveTo == "" {
		errs = append(errs, errors.New("max receive count without RedriveTo"))
	}
	if c.MessageRetention < 0 {
		errs = append(errs, fmt.Errorf("message retention %v < 0", c.MessageRetention))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", queue.ErrInvalid, err)
	}
	return nil
}

// Ensure makes sure the queue called name exists with cfg's attributes and
// returns its URL. created reports whether this call created it; an existing
// queue has cfg's (non-zero) attributes set, so repeated runs converge.
// Idempotent and safe to run concurrently with itself.
func Ensure(ctx context.Context, api EnsureAPI, name string, cfg EnsureConfig) (url string, created bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("sqsqueue: ensure %q: %w", name, err)
		}
	}()
	if err := cfg.validate(); err != nil {
		return "", false, err
	}
	attrs, err := ensureAttributes(ctx, api, cfg)
	if err != nil {
		return "", false, err
	}
	url, err = queueURL(ctx, api, name)
	if errors.Is(err, queue.ErrNotFound) {
		out, cerr := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if cerr == nil {
			return aws.ToString(out.QueueUrl), true, nil
		}
		var exists *types.QueueNameExists
		if !errors.As(cerr, &exists) {
			return "", false, mapError(cerr)
		}
		// Created meanwhile with other attributes: converge below.
		url, err = queueURL(ctx, api, name)
	}
	if err != nil {
		return "", false, err
	}
	if len(attrs) > 0 {
		if _, err := api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return "", false, mapError(err)
		}
	}
	return url, false, nil
}

func queueURL(ctx context.Context, api EnsureAPI, name string) (string, error) {
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", mapError(err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func ensureAttributes(ctx context.Context, api EnsureAPI, cfg EnsureConfig) (map[string]string, error) {
	attrs := map[string]string{}
	secs := func(d time.Duration) string { return strconv.Itoa(int((d + time.Second - 1) / time.Second)) }
	if cfg.VisibilityTimeout > 0 {
		attrs[string(types.QueueAttributeNameVisibilityTimeout)] = secs(cfg.VisibilityTimeout)
	}
	if cfg.MessageRetention > 0 {
		attrs[string(types.QueueAttributeNameMessageRetentionPeriod)] = secs(cfg.MessageRetention)
	}
	if cfg.SSE {
		attrs[string(types.QueueAttributeNameSqsManagedSseEnabled)] = "true"
	}
	if cfg.RedriveTo != "" {
		arn := cfg.RedriveTo
		if !strings.HasPrefix(arn, "arn:") {
			u, err := queueURL(ctx, api, arn)
			if err != nil {
				return nil, fmt.Errorf("dead-letter queue %q: %w", cfg.RedriveTo, err)
			}
			out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			if err != nil {
				return nil, fmt.Errorf("dead-letter queue %q: %w", cfg.RedriveTo, mapError(err))
			}
			arn = out.Attributes[string(types.QueueAttributeNameQueueArn)]
		}
		n := cfg.MaxReceiveCount
		if n == 0 {
			n = DefaultMaxReceiveCount
		}
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": n})
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	return attrs, nil
}
