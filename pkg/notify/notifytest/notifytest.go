// Package notifytest gives integration tests an SNS topic with an SQS queue
// subscribed to it, on the emulator (or real AWS), and reads what the topic
// delivered.
package notifytest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/awsconfig"
)

// Topic is a topic and the queue subscribed to it (SNS's JSON envelope,
// not raw delivery).
type Topic struct {
	ARN      string
	QueueURL string
	SNS      *sns.Client
	sqs      *sqs.Client
}

// Delivery is one notification as the subscribed queue received it.
type Delivery struct {
	Subject    string
	Message    string
	Attributes map[string]string
}

// New creates a uniquely named topic and queue, the queue policy that lets
// the topic send to it, and the subscription; all are deleted when the
// test ends.
func New(t testing.TB, cfg *awsconfig.Config) *Topic {
	t.Helper()
	ctx := t.Context()
	name := testenv.Prefix(t) + "notify"
	snsc, sqsc := cfg.SNS(), cfg.SQS()
	top, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	topicARN := aws.ToString(top.TopicArn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := snsc.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: aws.String(topicARN)}); err != nil {
			t.Logf("cleanup: delete topic: %v", err)
		}
	})
	testenv.CleanupQueues(t, sqsc, name)
	q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	url := aws.ToString(q.QueueUrl)
	qa, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	queueARN := qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	policy, _ := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect": "Allow", "Principal": map[string]string{"Service": "sns.amazonaws.com"},
			"Action": "sqs:SendMessage", "Resource": queueARN,
			"Condition": map[string]any{"ArnEquals": map[string]string{"aws:SourceArn": topicARN}},
		}},
	})
	if _, err := sqsc.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNamePolicy): string(policy)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String(queueARN)}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return &Topic{ARN: topicARN, QueueURL: url, SNS: snsc, sqs: sqsc}
}

// Receive waits up to timeout for n deliveries and returns those that came
// (deleting them from the queue).
func (tp *Topic) Receive(t testing.TB, n int, timeout time.Duration) []Delivery {
	t.Helper()
	var out []Delivery
	deadline := time.Now().Add(timeout)
	for len(out) < n && time.Now().Before(deadline) {
		resp, err := tp.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(tp.QueueURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		for _, m := range resp.Messages {
			d, err := parse(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
			if _, err := tp.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(tp.QueueURL),
				ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// parse reads SNS's JSON envelope.
func parse(body string) (Delivery, error) {
	var env struct {
		Type              string
		Subject           string
		Message           string
		MessageAttributes map[string]struct{ Type, Value string }
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Type != "Notification" {
		return Delivery{}, fmt.Errorf("notifytest: not an SNS notification (%v): %.300s", err, body)
	}
	d := Delivery{Subject: env.Subject, Message: env.Message, Attributes: map[string]string{}}
	for k, v := range env.MessageAttributes {
		if v.Type != "String" {
			return Delivery{}, fmt.Errorf("notifytest: attribute %s of type %s", k, v.Type)
		}
		d.Attributes[k] = v.Value
	}
	return d, nil
}
