package snsnotify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/millfleet/mill/pkg/notify"
)

// SNS limits (Publish): a subject is printable ASCII, one line, under 100
// characters; a message and its attributes at most 256 KiB; an SQS
// subscriber with raw delivery takes at most 10 message attributes.
const (
	MaxSubject    = 99
	MaxBody       = 200 << 10 // leaves room for the attributes
	MaxAttributes = 10
)

// API is the part of *sns.Client Notifier uses.
type API interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var _ API = (*sns.Client)(nil)

// Notifier publishes events to a topic: the subject (made printable ASCII and
// cut to MaxSubject), the body (cut to MaxBody), and the attributes as
// String message attributes (at most MaxAttributes; control characters
// become spaces), so a subscription can filter on them, e.g. the filter
// policy {"event": ["bit-report"]}.
type Notifier struct {
	client API
	topic  string
}

// New returns a notifier publishing to topicARN.
func New(client API, topicARN string) (*Notifier, error) {
	a, err := arn.Parse(topicARN)
	if err != nil || a.Service != "sns" || a.Resource == "" || strings.Contains(a.Resource, ":") {
		return nil, fmt.Errorf("notify: %q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", topicARN)
	}
	if client == nil {
		return nil, errors.New("notify: no SNS client")
	}
	return &Notifier{client: client, topic: topicARN}, nil
}

// Topic is the topic's ARN.
func (n *Notifier) Topic() string { return n.topic }

// Notify implements notify.Notifier: one Publish.
func (n *Notifier) Notify(ctx context.Context, e notify.Event) error {
	attrs := map[string]types.MessageAttributeValue{}
	m := e.Attrs()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(attrs) == MaxAttributes {
			break
		}
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(notify.OneLine(m[k]))}
	}
	body := e.Body
	if len(body) > MaxBody {
		cut := MaxBody
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut] + "\n… (cut: the message was longer than SNS allows)\n"
	}
	if strings.TrimSpace(body) == "" {
		body = e.Subject
	}
	_, err := n.client.Publish(ctx, &sns.PublishInput{
		TopicArn:          aws.String(n.topic),
		Subject:           aws.String(Subject(e.Subject)),
		Message:           aws.String(body),
		MessageAttributes: attrs,
	})
	if err != nil {
		return fmt.Errorf("notify: publish %s to %s: %w", e.Type, n.topic, err)
	}
	return nil
}

// Subject makes s a valid SNS subject: printable ASCII on one line (other
// characters become '?', line breaks and tabs spaces), not starting with a
// space, at most MaxSubject characters (cut with "...").
func Subject(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	out := strings.TrimSpace(b.String())
	if len(out) > MaxSubject {
		out = strings.TrimSpace(out[:MaxSubject-3]) + "..."
	}
	if out == "" {
		out = "Mill notification"
	}
	return out
}
