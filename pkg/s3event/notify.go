package s3event

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// NotificationID names the queue configuration ConfigureBucketNotifications
// owns in a bucket's notification configuration.
const NotificationID = "mill-audit"

// NotificationAPI is the part of *s3.Client ConfigureBucketNotifications
// uses.
type NotificationAPI interface {
	GetBucketNotificationConfiguration(context.Context, *s3.GetBucketNotificationConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketNotificationConfigurationOutput, error)
	PutBucketNotificationConfiguration(context.Context, *s3.PutBucketNotificationConfigurationInput, ...func(*s3.Options)) (*s3.PutBucketNotificationConfigurationOutput, error)
}

var _ NotificationAPI = (*s3.Client)(nil)

// ConfigureBucketNotifications makes bucket send s3:ObjectCreated:* and
// s3:ObjectRemoved:* notifications to the SQS queue queueARN (the audit
// queue). It is idempotent: it replaces only its own queue configuration
// (NotificationID) and keeps every other notification the bucket has. The
// queue's policy must let S3 send to it (QueuePolicy) before this is called
// on AWS, which checks the destination and sends an s3:TestEvent to it.
func ConfigureBucketNotifications(ctx context.Context, api NotificationAPI, bucket, queueARN string) error {
	cur, err := api.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("s3event: get notifications of bucket %s: %w", bucket, err)
	}
	cfg := &types.NotificationConfiguration{
		TopicConfigurations:          cur.TopicConfigurations,
		LambdaFunctionConfigurations: cur.LambdaFunctionConfigurations,
		EventBridgeConfiguration:     cur.EventBridgeConfiguration,
	}
	for _, q := range cur.QueueConfigurations {
		if aws.ToString(q.Id) != NotificationID {
			cfg.QueueConfigurations = append(cfg.QueueConfigurations, q)
		}
	}
	cfg.QueueConfigurations = append(cfg.QueueConfigurations, types.QueueConfiguration{
		Id:       aws.String(NotificationID),
		QueueArn: aws.String(queueARN),
		Events:   []types.Event{"s3:ObjectCreated:*", "s3:ObjectRemoved:*"},
	})
	_, err = api.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket:                    aws.String(bucket),
		NotificationConfiguration: cfg,
	})
	if err != nil {
		return fmt.Errorf("s3event: configure notifications of bucket %s to %s: %w", bucket, queueARN, err)
	}
	return nil
}

// QueuePolicy returns an SQS queue policy (the queue's "Policy" attribute)
// that lets S3 send the notifications of buckets to the queue queueARN.
// sourceAccount, when set, also requires the buckets to belong to that AWS
// account (recommended on AWS).
func QueuePolicy(queueARN, sourceAccount string, buckets ...string) (string, error) {
	arns := make([]string, 0, len(buckets))
	for _, b := range buckets {
		arns = append(arns, "arn:aws:s3:::"+b)
	}
	cond := map[string]any{"ArnLike": map[string]any{"aws:SourceArn": arns}}
	if sourceAccount != "" {
		cond["StringEquals"] = map[string]any{"aws:SourceAccount": sourceAccount}
	}
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Sid":       "MillS3EventNotifications",
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "s3.amazonaws.com"},
			"Action":    "sqs:SendMessage",
			"Resource":  queueARN,
			"Condition": cond,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("s3event: queue policy: %w", err)
	}
	return string(b), nil
}
