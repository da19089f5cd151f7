package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/pkg/queue"
)

// The SDK speaks SQS's AWS JSON 1.0 protocol. An error answer carries the
// error's JSON type in "__type" and, because SQS is query-compatible, the
// code of the older query protocol in the X-Amzn-Query-Error header
// ("Code;Sender"), which the SDK reports as the error code when present. A
// batch call answers 200 and names each failed entry's code in its body.
//
// Each shape below is how one service says "this receipt handle no longer
// names an in-flight delivery". AWS's shapes are built from its
// documentation (the ChangeMessageVisibility and DeleteMessage API
// references, the JSON error format of the SQS developer guide, and the
// knowledge-center article on ReceiptHandleIsInvalid and
// InvalidParameterValue errors); LocalStack 4.14.0's and moto 5.2.5's were
// recorded from the services, handles shortened.
type errorShape struct {
	name string
	// entry is a batch answer's failed entry.
	code, message string
	senderFault   bool
	// The answer to a single-message call (and to a batch call that fails
	// as a whole): the X-Amzn-Query-Error header ("" = none) and __type.
	queryError, jsonType string
}

const (
	awsNotAvailable = "Value AQEBd2l0aGEtaGFuZGxl for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."
	awsExpired      = "Value AQEBd2l0aGEtaGFuZGxl for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."
)

var staleReceiptShapes = []errorShape{
	{name: "AWS: visibility change of a deleted message", code: "InvalidParameterValue", message: awsNotAvailable, senderFault: true,
		queryError: "InvalidParameterValue;Sender", jsonType: "com.amazonaws.sqs#InvalidParameterValueException"},
	{name: "AWS: expired receipt handle", code: "InvalidParameterValue", message: awsExpired, senderFault: true,
		queryError: "InvalidParameterValue;Sender", jsonType: "com.amazonaws.sqs#InvalidParameterValueException"},
	{name: "AWS: message not in flight", code: "AWS.SimpleQueueService.MessageNotInflight", message: "The specified message isn't in flight.", senderFault: true,
		queryError: "AWS.SimpleQueueService.MessageNotInflight;Sender", jsonType: "com.amazonaws.sqs#MessageNotInflight"},
	{name: "AWS: receipt handle not valid", code: "ReceiptHandleIsInvalid", message: "The input receipt handle 'AQEBd2l0aGEtaGFuZGxl' is not a valid receipt handle.", senderFault: true,
		queryError: "ReceiptHandleIsInvalid;Sender", jsonType: "com.amazonaws.sqs#ReceiptHandleIsInvalid"},
	{name: "AWS: receipt handle of an older version", code: "InvalidIdFormat", message: "The specified receipt handle isn't valid for the current version.", senderFault: true,
		queryError: "InvalidIdFormat;Sender", jsonType: "com.amazonaws.sqs#InvalidIdFormat"},
	{name: "JSON type only, no query header", code: "ReceiptHandleIsInvalid", message: "The input receipt handle is invalid.", senderFault: true,
		jsonType: "com.amazonaws.sqs#ReceiptHandleIsInvalid"},
	{name: "LocalStack 4.14: visibility change of a deleted message", code: "InvalidParameterValueException", message: "Value ODRjMjEyOWEt for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
		queryError: "InvalidParameterValue;Sender", jsonType: "InvalidParameterValueException"},
	{name: "LocalStack 4.14: receipt handle not valid", code: "ReceiptHandleIsInvalid", message: `The input receipt handle "garbage" is not a valid receipt handle.`,
		queryError: "ReceiptHandleIsInvalid;Sender", jsonType: "ReceiptHandleIsInvalid"},
	{name: "moto 5.2.5: visibility change of a deleted message", code: "ReceiptHandleIsInvalid", message: "The input receipt handle is invalid.", senderFault: true,
		queryError: "ReceiptHandleIsInvalid;Sender", jsonType: "com.amazonaws.sqs#ReceiptHandleIsInvalid"},
}

// Shapes that are not about the receipt handle keep their meaning.
var otherShapes = []struct {
	errorShape
	want  error // nil: no portable meaning
	retry bool  // a batch entry of this shape is sent again
}{
	{errorShape{name: "AWS: visibility timeout out of range", code: "InvalidParameterValue", message: "Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", senderFault: true,
		queryError: "InvalidParameterValue;Sender", jsonType: "com.amazonaws.sqs#InvalidParameterValueException"}, queue.ErrInvalid, false},
	{errorShape{name: "AWS: total visibility beyond 12 hours", code: "InvalidParameterValue", message: "Value 600 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds].", senderFault: true,
		queryError: "InvalidParameterValue;Sender", jsonType: "com.amazonaws.sqs#InvalidParameterValueException"}, queue.ErrInvalid, false},
	{errorShape{name: "queue gone", code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist.", senderFault: true,
		queryError: "AWS.SimpleQueueService.NonExistentQueue;Sender", jsonType: "com.amazonaws.sqs#QueueDoesNotExist"}, queue.ErrNotFound, false},
	{errorShape{name: "service fault", code: "InternalError", message: "We encountered an internal error. Please try again.",
		queryError: "InternalError;Receiver", jsonType: "com.amazonaws.sqs#InternalError"}, nil, true},
}

// sqsJSON is an SQS endpoint that answers every call of one operation
// with a fixed status, query-error header and body, and counts the calls.
type sqsJSON struct {
	mu      sync.Mutex
	answers map[string]jsonAnswer // by operation, e.g. "DeleteMessageBatch"
	calls   map[string]int
}

type jsonAnswer struct {
	status     int
	queryError string
	body       string
}

func newSQSJSON(t *testing.T) (*sqsJSON, *sqs.Client) {
	s := &sqsJSON{answers: map[string]jsonAnswer{}, calls: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
	s.answer("GetQueueUrl", jsonAnswer{status: 200, body: `{"QueueUrl":"` + srv.URL + `/000000000000/q"}`})
	return s, c
}

func (s *sqsJSON) answer(op string, a jsonAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[op] = a
}

func (s *sqsJSON) count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

func (s *sqsJSON) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	s.mu.Lock()
	a, ok := s.answers[op]
	s.calls[op]++
	s.mu.Unlock()
	if !ok {
		a = jsonAnswer{status: 400, queryError: "InvalidAction;Sender", body: `{"__type":"com.amazonaws.sqs#InvalidAction","message":"unexpected ` + op + `"}`}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if a.queryError != "" {
		w.Header().Set("X-Amzn-Query-Error", a.queryError)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// batchFailure answers a batch call of one entry (Id "0") with its failure.
func (e errorShape) batchFailure() jsonAnswer {
	return jsonAnswer{status: 200, body: fmt.Sprintf(`{"Successful":[],"Failed":[{"Id":"0","SenderFault":%t,"Code":%s,"Message":%s}]}`,
		e.senderFault, jsonString(e.code), jsonString(e.message))}
}

// callError answers a call with the error as a whole.
func (e errorShape) callError() jsonAnswer {
	return jsonAnswer{status: 400, queryError: e.queryError,
		body: fmt.Sprintf(`{"__type":%s,"message":%s}`, jsonString(e.jsonType), jsonString(e.message))}
}

// shapeFixture opens a Queue on an sqsJSON endpoint whose batch visibility
// changes fail with sh, and returns a message to act on.
func shapeFixture(t *testing.T, sh errorShape) (*sqsJSON, *sqs.Client, *Queue, *queue.Message) {
	t.Helper()
	s, c := newSQSJSON(t)
	q, err := Open(context.Background(), c, "q", Config{RetryBackoff: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.answer("ChangeMessageVisibilityBatch", sh.batchFailure())
	return s, c, q, &queue.Message{ID: "m", ReceiptHandle: "AQEBd2l0aGEtaGFuZGxl"}
}

// TestStaleReceiptShapes: for every shape, ChangeVisibility reports
// queue.ErrReceiptInvalid for the entry, Release and Delete succeed, none of
// them sends the entry again, and the error of a single-message call maps
// to queue.ErrReceiptInvalid too.
func TestStaleReceiptShapes(t *testing.T) {
	for _, sh := range staleReceiptShapes {
		t.Run(sh.name, func(t *testing.T) {
			s, c, q, m := shapeFixture(t, sh)
			ctx := context.Background()
			s.answer("DeleteMessageBatch", sh.batchFailure())

			err := q.ChangeVisibility(ctx, queue.VisibilityChange{Message: m, Timeout: 1})
			var be *queue.BatchError
			if !errors.As(err, &be) || len(be.Failed) != 1 || !errors.Is(be.Failed[0], queue.ErrReceiptInvalid) {
				t.Errorf("ChangeVisibility: %v, want queue.ErrReceiptInvalid for entry 0", err)
			}
			if err := q.Release(ctx, m); err != nil {
				t.Errorf("Release: %v, want success", err)
			}
			if n := s.count("ChangeMessageVisibilityBatch"); n != 2 {
				t.Errorf("%d ChangeMessageVisibilityBatch requests for one ChangeVisibility and one Release, want 2 (a stale receipt is not retried)", n)
			}
			if err := q.Delete(ctx, m); err != nil {
				t.Errorf("Delete: %v, want success", err)
			}
			if n := s.count("DeleteMessageBatch"); n != 1 {
				t.Errorf("%d DeleteMessageBatch requests, want 1", n)
			}

			// The same answer to a whole batch call.
			s.answer("ChangeMessageVisibilityBatch", sh.callError())
			if err := q.ChangeVisibility(ctx, queue.VisibilityChange{Message: m, Timeout: 1}); !errors.Is(err, queue.ErrReceiptInvalid) {
				t.Errorf("ChangeVisibility, the batch call failing: %v, want queue.ErrReceiptInvalid", err)
			}

			// The single-message calls.
			s.answer("ChangeMessageVisibility", sh.callError())
			s.answer("DeleteMessage", sh.callError())
			_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL()), ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: 1})
			if err == nil || !errors.Is(mapError(err), queue.ErrReceiptInvalid) {
				t.Errorf("ChangeMessageVisibility: %v maps to %v, want queue.ErrReceiptInvalid", err, mapError(err))
			}
			_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL()), ReceiptHandle: aws.String(m.ReceiptHandle)})
			if err == nil || !errors.Is(mapError(err), queue.ErrReceiptInvalid) {
				t.Errorf("DeleteMessage: %v maps to %v, want queue.ErrReceiptInvalid", err, mapError(err))
			}
		})
	}
}

// TestOtherErrorShapes: errors that are not about the receipt handle are not
// mistaken for one: Release reports them, and only a service fault is sent
// again.
func TestOtherErrorShapes(t *testing.T) {
	for _, sh := range otherShapes {
		t.Run(sh.name, func(t *testing.T) {
			s, c, q, m := shapeFixture(t, sh.errorShape)
			ctx := context.Background()
			err := q.Release(ctx, m)
			var be *queue.BatchError
			if !errors.As(err, &be) || len(be.Failed) != 1 || errors.Is(err, queue.ErrReceiptInvalid) {
				t.Fatalf("Release: %v, want entry 0 failed, not as a stale receipt", err)
			}
			if sh.want != nil && !errors.Is(err, sh.want) {
				t.Errorf("Release: %v, want %v", err, sh.want)
			}
			wantCalls := 1
			if sh.retry {
				wantCalls += DefaultRetries
			}
			if n := s.count("ChangeMessageVisibilityBatch"); n != wantCalls {
				t.Errorf("%d requests, want %d", n, wantCalls)
			}
			s.answer("ChangeMessageVisibility", sh.callError())
			_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL()), ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: 1})
			if got := mapError(err); err == nil || errors.Is(got, queue.ErrReceiptInvalid) || (sh.want != nil && !errors.Is(got, sh.want)) {
				t.Errorf("ChangeMessageVisibility: %v maps to %v, want %v", err, got, sh.want)
			}
		})
	}
}

// TestPurgeInProgress: SQS's answer to a second PurgeQueue within 60 s, in
// the query and the JSON protocols' spelling, is queue.ErrPurgeInProgress.
func TestPurgeInProgress(t *testing.T) {
	for _, code := range []string{"AWS.SimpleQueueService.PurgeQueueInProgress", "com.amazonaws.sqs#PurgeQueueInProgress", "PurgeQueueInProgress"} {
		if got := portable(code, "Only one PurgeQueue operation on q is allowed every 60 seconds."); got != queue.ErrPurgeInProgress {
			t.Errorf("%s: %v, want queue.ErrPurgeInProgress", code, got)
		}
	}
}
