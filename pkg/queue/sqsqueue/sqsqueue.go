package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/pkg/queue"
)

// API is the part of *sqs.Client a Queue uses (tests may wrap it to inject
// faults).
type API interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	PurgeQueue(context.Context, *sqs.PurgeQueueInput, ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Queue is one SQS queue. Create it with Open.
type Queue struct {
	api  API
	name string
	url  string
	host string // of url, naming the dependency in a TimeoutError
	cfg  Config

	visMu sync.Mutex
	vis   time.Duration // cached VisibilityTimeout; 0 = not yet read
}

var _ queue.Queue = (*Queue)(nil)

// Open resolves the queue called name. A queue that does not exist is
// queue.ErrNotFound; a Config out of range is queue.ErrInvalid, naming
// every problem, before any request.
func Open(ctx context.Context, api API, name string, cfg Config) (*Queue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var out *sqs.GetQueueUrlOutput
	err := request(ctx, "GetQueueUrl", "", cfg.CallTimeout, func(ctx context.Context) (err error) {
		out, err = api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: open %q: %w", name, mapError(err))
	}
	u := aws.ToString(out.QueueUrl)
	return &Queue{api: api, name: name, url: u, host: urlHost(u), cfg: cfg}, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// URL returns the queue's URL.
func (q *Queue) URL() string { return q.url }

func (q *Queue) wrap(op string, err error) error {
	return fmt.Errorf("sqsqueue: %s %s: %w", op, q.name, err)
}

// VisibilityTimeout returns the queue's VisibilityTimeout attribute, read
// once and cached.
func (q *Queue) VisibilityTimeout(ctx context.Context) (time.Duration, error) {
	q.visMu.Lock()
	defer q.visMu.Unlock()
	if q.vis > 0 {
		return q.vis, nil
	}
	attrs, err := q.attributes(ctx, types.QueueAttributeNameVisibilityTimeout)
	if err != nil {
		return 0, q.wrap("visibility timeout", err)
	}
	s, err := strconv.Atoi(attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return 0, q.wrap("visibility timeout", err)
	}
	q.vis = time.Duration(s) * time.Second
	return q.vis, nil
}

func (q *Queue) attributes(ctx context.Context, names ...types.QueueAttributeName) (map[string]string, error) {
	var out *sqs.GetQueueAttributesOutput
	err := q.request(ctx, "GetQueueAttributes", q.cfg.CallTimeout, func(ctx context.Context) (err error) {
		out, err = q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.url), AttributeNames: names})
		return err
	})
	if err != nil {
		return nil, mapError(err)
	}
	return out.Attributes, nil
}

// Depth reads the approximate counts of visible, in-flight and delayed
// messages.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	attrs, err := q.attributes(ctx,
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	if err != nil {
		return queue.Depth{}, q.wrap("depth", err)
	}
	var d queue.Depth
	for name, dst := range map[types.QueueAttributeName]*int64{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
	} {
		if v, ok := attrs[string(name)]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return queue.Depth{}, q.wrap("depth", fmt.Errorf("%s=%q: %w", name, v, err))
			}
			*dst = n
		}
	}
	return d, nil
}

// Receive long-polls for up to n messages with the queue's visibility
// timeout (see ReceiveWith).
func (q *Queue) Receive(ctx context.Context, n int, wait time.Duration) ([]*queue.Message, error) {
	return q.ReceiveWith(ctx, queue.ReceiveOptions{Max: n, Wait: wait})
}

// ReceiveWith long-polls for up to o.Max messages (clamped to
// 1..queue.MaxBatch; o.Wait to 0..queue.MaxWait and rounded up to whole
// seconds, SQS's unit, as is o.Visibility). It asks for
// ApproximateReceiveCount, SentTimestamp, MessageGroupId and all message
// attributes (in the one request);
// string and number attributes are returned in Attributes.
func (q *Queue) ReceiveWith(ctx context.Context, o queue.ReceiveOptions) ([]*queue.Message, error) {
	if err := o.CheckVisibility(); err != nil {
		return nil, q.wrap("receive", err)
	}
	n := min(max(o.Max, 1), queue.MaxBatch)
	wait := min(max(o.Wait, 0), queue.MaxWait)
	in := &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(n),
		WaitTimeSeconds:     seconds(wait),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
			types.MessageSystemAttributeNameMessageGroupId,
		},
		MessageAttributeNames: []string{"All"},
	}
	if o.Visibility > 0 {
		in.VisibilityTimeout = seconds(o.Visibility)
	}
	var out *sqs.ReceiveMessageOutput
	// SQS answers a long poll within its wait: the deadline is the wait
	// SQS was asked for plus CallTimeout.
	deadline := time.Duration(in.WaitTimeSeconds)*time.Second + q.cfg.CallTimeout
	err := q.request(ctx, "ReceiveMessage", deadline, func(ctx context.Context) (err error) {
		out, err = q.api.ReceiveMessage(ctx, in)
		return err
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, q.wrap("receive", mapError(err))
	}
	msgs := make([]*queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		qm := &queue.Message{
			ID:            aws.ToString(m.MessageId),
			ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body:          []byte(aws.ToString(m.Body)),
		}
		if v, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil {
			qm.ReceiveCount = v
		}
		if v, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			qm.SentAt = time.UnixMilli(v)
		}
		qm.Group = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		for k, v := range m.MessageAttributes {
			if v.StringValue == nil {
				continue // binary attributes are not part of Mill's messages
			}
			if qm.Attributes == nil {
				qm.Attributes = make(map[string]string, len(m.MessageAttributes))
			}
			qm.Attributes[k] = *v.StringValue
		}
		msgs = append(msgs, qm)
	}
	return msgs, nil
}

// entrySize is what SQS counts towards a message's size: the body and each
// attribute's name, data type and value.
func entrySize(e queue.SendEntry) int {
	n := len(e.Body)
	for k, v := range e.Attributes {
		n += len(k) + len("String") + len(v)
	}
	return n
}

// validBody reports whether b is text SQS accepts: UTF-8 made of #x9, #xA,
// #xD, #x20–#xD7FF, #xE000–#xFFFD and #x10000–#x10FFFF.
func validBody(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		b = b[n:]
	}
	return true
}

// Send sends the entries with SendMessageBatch, at most 10 and
// MaxBatchBytes per request. Bodies must be text SQS accepts (see
// queue.SendEntry; binary data must be encoded) — others fail with
// queue.ErrInvalid, as do empty attribute values, delays outside
// 0..queue.MaxDelay and groups queue.CheckGroup refuses; oversized entries
// fail with queue.ErrTooLarge; all without a request. An entry's Group is
// sent as its MessageGroupId.
func (q *Queue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	b := newBatcher(q, "send")
	var chunk []int
	chunkBytes := 0
	flush := func() {
		if len(chunk) > 0 {
			b.run(ctx, chunk, q.sendChunk(entries))
		}
		chunk, chunkBytes = nil, 0
	}
	for i, e := range entries {
		if err := validateEntry(e, q.cfg.MaxMessageBytes); err != nil {
			b.fail(i, err)
			continue
		}
		sz := entrySize(e)
		if len(chunk) == queue.MaxBatch || chunkBytes+sz > q.cfg.MaxBatchBytes {
			flush()
		}
		chunk = append(chunk, i)
		chunkBytes += sz
	}
	flush()
	return b.err()
}

func validateEntry(e queue.SendEntry, maxBytes int) error {
	if err := queue.CheckDelay(e.Delay); err != nil {
		return err
	}
	if n := entrySize(e); n > maxBytes {
		return fmt.Errorf("%d bytes > %d: %w", n, maxBytes, queue.ErrTooLarge)
	}
	if !validBody(e.Body) {
		return fmt.Errorf("body is not SQS text (UTF-8 without control characters): %w", queue.ErrInvalid)
	}
	for k, v := range e.Attributes {
		if v == "" {
			return fmt.Errorf("attribute %q is empty: %w", k, queue.ErrInvalid)
		}
	}
	return queue.CheckGroup(e.Group)
}

func (q *Queue) sendChunk(entries []queue.SendEntry) chunkFunc {
	return func(ctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: make([]types.SendMessageBatchRequestEntry, len(idx))}
		for j, i := range idx {
			e := entries[i]
			re := types.SendMessageBatchRequestEntry{
				Id:           aws.String(strconv.Itoa(i)),
				MessageBody:  aws.String(string(e.Body)),
				DelaySeconds: seconds(e.Delay),
			}
			if e.Group != "" {
				re.MessageGroupId = aws.String(e.Group)
			}
			if len(e.Attributes) > 0 {
				re.MessageAttributes = make(map[string]types.MessageAttributeValue, len(e.Attributes))
				for k, v := range e.Attributes {
					re.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
				}
			}
			in.Entries[j] = re
		}
		var out *sqs.SendMessageBatchOutput
		var a attempts
		err := q.request(ctx, "SendMessageBatch", q.cfg.CallTimeout, func(ctx context.Context) (err error) {
			out, err = q.api.SendMessageBatch(ctx, in, a.option)
			return err
		})
		q.logResent(ctx, "SendMessageBatch", &a, len(idx), out, err)
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	}
}

// Delete deletes the messages with DeleteMessageBatch. A receipt handle SQS
// calls invalid (the message is already gone) is success.
func (q *Queue) Delete(ctx context.Context, msgs ...*queue.Message) error {
	b := newBatcher(q, "delete")
	b.ignore = receiptGone
	b.runAll(ctx, len(msgs), func(i int) error {
		if msgs[i] == nil {
			return fmt.Errorf("nil message: %w", queue.ErrInvalid)
		}
		return nil
	}, q.deleteChunk(msgs))
	return b.err()
}

func (q *Queue) deleteChunk(msgs []*queue.Message) chunkFunc {
	return func(ctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: make([]types.DeleteMessageBatchRequestEntry, len(idx))}
		for j, i := range idx {
			in.Entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(msgs[i].ReceiptHandle)}
		}
		var out *sqs.DeleteMessageBatchOutput
		err := q.request(ctx, "DeleteMessageBatch", q.cfg.CallTimeout, func(ctx context.Context) (err error) {
			out, err = q.api.DeleteMessageBatch(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	}
}

// ChangeVisibility sets each message's visibility timeout with
// ChangeMessageVisibilityBatch. An entry whose receipt handle no longer
// names an in-flight delivery fails with queue.ErrReceiptInvalid.
func (q *Queue) ChangeVisibility(ctx context.Context, changes ...queue.VisibilityChange) error {
	return q.changeVisibility(ctx, "change visibility", changes)
}

// Release sets the messages' visibility timeout to 0. A message no longer in
// flight under its receipt handle is skipped without error.
func (q *Queue) Release(ctx context.Context, msgs ...*queue.Message) error {
	ch := make([]queue.VisibilityChange, len(msgs))
	for i, m := range msgs {
		ch[i] = queue.VisibilityChange{Message: m}
	}
	return q.changeVisibility(ctx, "release", ch)
}

func (q *Queue) changeVisibility(ctx context.Context, op string, changes []queue.VisibilityChange) error {
	b := newBatcher(q, op)
	if op == "release" {
		b.ignore = receiptGone
	}
	b.runAll(ctx, len(changes), func(i int) error {
		switch c := changes[i]; {
		case c.Message == nil:
			return fmt.Errorf("nil message: %w", queue.ErrInvalid)
		case c.Timeout < 0 || c.Timeout > queue.MaxVisibility:
			return fmt.Errorf("visibility %v outside 0..%v: %w", c.Timeout, queue.MaxVisibility, queue.ErrInvalid)
		}
		return nil
	}, q.visibilityChunk(changes))
	return b.err()
}

func (q *Queue) visibilityChunk(changes []queue.VisibilityChange) chunkFunc {
	return func(ctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: make([]types.ChangeMessageVisibilityBatchRequestEntry, len(idx))}
		for j, i := range idx {
			c := changes[i]
			in.Entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(c.Message.ReceiptHandle),
				VisibilityTimeout: seconds(c.Timeout),
			}
		}
		var out *sqs.ChangeMessageVisibilityBatchOutput
		err := q.request(ctx, "ChangeMessageVisibilityBatch", q.cfg.CallTimeout, func(ctx context.Context) (err error) {
			out, err = q.api.ChangeMessageVisibilityBatch(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	}
}

// Purge deletes every message of the queue with PurgeQueue. SQS finishes
// within 60 s; a second purge within 60 s fails with
// queue.ErrPurgeInProgress.
func (q *Queue) Purge(ctx context.Context) error {
	err := q.request(ctx, "PurgeQueue", q.cfg.CallTimeout, func(ctx context.Context) error {
		_, err := q.api.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(q.url)})
		return err
	})
	if err != nil {
		return q.wrap("purge", mapError(err))
	}
	return nil
}

// seconds rounds d up to whole seconds, SQS's unit.
func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// errCtx returns ctx's error if it is done, else err mapped.
func errCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return mapError(err)
}
