package sqsfair

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

// maxBatchPayload is the most one SendMessageBatch carries in all (1 MiB).
const maxBatchPayload = 1 << 20

type sendResult struct {
	Id                     string `json:",omitempty"`
	MessageId              string
	MD5OfMessageBody       string
	MD5OfMessageAttributes string `json:",omitempty"`
}

type batchFailure struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

func failure(id string, err error) batchFailure {
	var ae *apiError
	if errors.As(err, &ae) {
		return batchFailure{Id: id, SenderFault: ae.sender, Code: ae.shape, Message: ae.message}
	}
	return batchFailure{Id: id, Code: "InternalError", Message: err.Error()}
}

func result(id, msgID string, e sendEntry) sendResult {
	return sendResult{Id: id, MessageId: msgID, MD5OfMessageBody: md5Hex(*e.MessageBody), MD5OfMessageAttributes: md5OfAttributes(e.MessageAttributes)}
}

func (s *Server) sendMessage(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueUrl *string
		sendEntry
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	e, err := q.entry(in.sendEntry)
	if err != nil {
		return nil, err
	}
	ids, err := q.mq.SendIDs(context.Background(), e)
	if err != nil {
		return nil, err
	}
	return result("", ids[0], in.sendEntry), nil
}

func (s *Server) sendMessageBatch(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueUrl *string
		Entries  []sendEntry
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	ids := make([]*string, len(in.Entries))
	total := 0
	for i, e := range in.Entries {
		ids[i] = e.Id
		if e.MessageBody != nil {
			total += len(*e.MessageBody)
		}
		for n, v := range e.MessageAttributes {
			total += len(n) + len(deref(v.DataType)) + len(deref(v.StringValue)) + len(v.BinaryValue)
		}
	}
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	if total > maxBatchPayload {
		return nil, errShape("BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", "Batch requests cannot be longer than %d bytes. You have sent %d bytes.", maxBatchPayload, total)
	}
	out := struct {
		Successful []sendResult
		Failed     []batchFailure
	}{Successful: []sendResult{}, Failed: []batchFailure{}}
	var good []queue.SendEntry
	var goodIdx []int
	for i, e := range in.Entries {
		se, err := q.entry(e)
		if err != nil {
			out.Failed = append(out.Failed, failure(*e.Id, err))
			continue
		}
		good, goodIdx = append(good, se), append(goodIdx, i)
	}
	msgIDs, err := q.mq.SendIDs(context.Background(), good...)
	if err != nil {
		return nil, err
	}
	for j, i := range goodIdx {
		out.Successful = append(out.Successful, result(*in.Entries[i].Id, msgIDs[j], in.Entries[i]))
	}
	return out, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// systemAttrs are the MessageSystemAttributeNames of the API reference.
var systemAttrs = []string{"All", "SenderId", "SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp",
	"SequenceNumber", "MessageDeduplicationId", "MessageGroupId", "AWSTraceHeader", "DeadLetterQueueSourceArn"}

type wireMessage struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string    `json:",omitempty"`
	MD5OfMessageAttributes string               `json:",omitempty"`
	MessageAttributes      map[string]attrValue `json:",omitempty"`
}

func (s *Server) receiveMessage(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueUrl                    *string
		AttributeNames              []string
		MessageSystemAttributeNames []string
		MessageAttributeNames       []string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int
		WaitTimeSeconds             *int
		ReceiveRequestAttemptId     *string
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	o := queue.ReceiveOptions{Max: 1, Wait: q.wait}
	if p := in.MaxNumberOfMessages; p != nil {
		if *p < 1 || *p > queue.MaxBatch {
			return nil, errInvalid("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *p)
		}
		o.Max = *p
	}
	if p := in.WaitTimeSeconds; p != nil {
		if *p < 0 || *p > 20 {
			return nil, errInvalid("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *p)
		}
		o.Wait = time.Duration(*p) * time.Second
	}
	if p := in.VisibilityTimeout; p != nil {
		if *p < 0 || *p > 43200 {
			return nil, errInvalid("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", *p)
		}
		// memqueue reads 0 as the queue's timeout; SQS's 0 is "at once".
		o.Visibility = max(time.Duration(*p)*time.Second, time.Nanosecond)
	}
	sys := append(slices.Clone(in.MessageSystemAttributeNames), in.AttributeNames...)
	for _, n := range sys {
		if !slices.Contains(systemAttrs, n) {
			return nil, errShape("InvalidAttributeName", "InvalidAttributeName", "Unknown Attribute %.80s.", n)
		}
	}
	for _, n := range in.MessageAttributeNames {
		if n != "All" && n != ".*" && !checkAttrName(strings.TrimSuffix(n, ".*")) {
			return nil, errInvalid("Message attribute name %.60q is invalid.", n)
		}
	}
	msgs, err := q.mq.ReceiveWith(ctx, o)
	if err != nil {
		return nil, err
	}
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		wm := wireMessage{MessageId: m.ID, ReceiptHandle: base64.RawURLEncoding.EncodeToString([]byte(m.ReceiptHandle)),
			MD5OfBody: md5Hex(string(m.Body)), Body: string(m.Body)}
		wm.Attributes = s.systemAttributes(sys, m)
		attrs := wireAttrs(m.Attributes)
		for n := range attrs {
			if !wanted(in.MessageAttributeNames, n) {
				delete(attrs, n)
			}
		}
		if len(attrs) > 0 {
			wm.MessageAttributes, wm.MD5OfMessageAttributes = attrs, md5OfAttributes(attrs)
		}
		out = append(out, wm)
	}
	if len(out) == 0 {
		return struct{}{}, nil
	}
	return map[string]any{"Messages": out}, nil
}

// systemAttributes are the asked-for system attributes the stand-in
// knows of m (see the package doc for those it does not).
func (s *Server) systemAttributes(names []string, m *queue.Message) map[string]string {
	all := slices.Contains(names, "All")
	out := map[string]string{}
	ask := func(n string) bool { return all || slices.Contains(names, n) }
	if ask("SenderId") {
		out["SenderId"] = s.o.Account
	}
	if ask("SentTimestamp") {
		out["SentTimestamp"] = strconv.FormatInt(m.SentAt.UnixMilli(), 10)
	}
	if ask("ApproximateReceiveCount") {
		out["ApproximateReceiveCount"] = strconv.Itoa(m.ReceiveCount)
	}
	if ask("MessageGroupId") && m.Group != "" {
		out["MessageGroupId"] = m.Group
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// wanted reports whether MessageAttributeNames ask for attribute n: All,
// .*, its name, or a prefix.* it starts with.
func wanted(names []string, n string) bool {
	for _, w := range names {
		if w == "All" || w == ".*" || w == n || strings.HasSuffix(w, ".*") && strings.HasPrefix(n, strings.TrimSuffix(w, "*")) {
			return true
		}
	}
	return false
}

// handle reads a receipt handle the stand-in gave; one it cannot read is
// ReceiptHandleIsInvalid.
func handle(h *string) (*queue.Message, error) {
	if h == nil {
		return nil, errMissing("ReceiptHandle")
	}
	b, err := base64.RawURLEncoding.DecodeString(*h)
	if err != nil || len(b) == 0 {
		return nil, errShape("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", "The input receipt handle %.60q is not a valid receipt handle.", *h)
	}
	return &queue.Message{ReceiptHandle: string(b)}, nil
}

type receiptEntry struct {
	Id                *string
	ReceiptHandle     *string
	VisibilityTimeout *int
}

func (s *Server) deleteMessage(ctx context.Context, body []byte) (any, error) {
	return s.receiptOne(body, (*fqueue).delete)
}

// receiptOne runs one entry operation on the entry a request names.
func (s *Server) receiptOne(body []byte, op func(*fqueue, receiptEntry) error) (any, error) {
	var in struct {
		QueueUrl *string
		receiptEntry
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := op(q, in.receiptEntry); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// delete removes the message a current receipt handle names; a stale one
// deletes nothing and succeeds, as on SQS.
func (q *fqueue) delete(e receiptEntry) error {
	m, err := handle(e.ReceiptHandle)
	if err != nil {
		return err
	}
	return q.mq.Delete(context.Background(), m)
}

func (s *Server) changeMessageVisibility(ctx context.Context, body []byte) (any, error) {
	return s.receiptOne(body, (*fqueue).changeVisibility)
}

// changeVisibility sets an in-flight message's visibility timeout,
// counted from now; a message not in flight under the handle is AWS's
// InvalidParameterValue about the ReceiptHandle.
func (q *fqueue) changeVisibility(e receiptEntry) error {
	m, err := handle(e.ReceiptHandle)
	if err != nil {
		return err
	}
	if e.VisibilityTimeout == nil {
		return errMissing("VisibilityTimeout")
	}
	if v := *e.VisibilityTimeout; v < 0 || v > 43200 {
		return errInvalid("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.", v)
	}
	err = q.mq.ChangeVisibility(context.Background(), queue.VisibilityChange{Message: m, Timeout: time.Duration(*e.VisibilityTimeout) * time.Second})
	if errors.Is(err, queue.ErrReceiptInvalid) {
		return errInvalid("Value %.60s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", *e.ReceiptHandle)
	}
	return err
}

type batchOut struct {
	Successful []map[string]string
	Failed     []batchFailure
}

// receiptBatch runs one entry operation on every entry of a batch.
func (s *Server) receiptBatch(body []byte, op func(*fqueue, receiptEntry) error) (any, error) {
	var in struct {
		QueueUrl *string
		Entries  []receiptEntry
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	out := batchOut{Successful: []map[string]string{}, Failed: []batchFailure{}}
	for _, e := range in.Entries {
		if err := op(q, e); err != nil {
			out.Failed = append(out.Failed, failure(*e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, map[string]string{"Id": *e.Id})
	}
	return out, nil
}

func (s *Server) deleteMessageBatch(ctx context.Context, body []byte) (any, error) {
	return s.receiptBatch(body, (*fqueue).delete)
}

func (s *Server) changeMessageVisibilityBatch(ctx context.Context, body []byte) (any, error) {
	return s.receiptBatch(body, (*fqueue).changeVisibility)
}
