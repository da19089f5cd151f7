package sqsfair_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/testkit/sqsfair"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

func start(t testing.TB, fair bool) (*sqsfair.Server, *sqs.Client) {
	t.Helper()
	s := sqsfair.New(sqsfair.Options{Fair: fair})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, s.Client()
}

func create(t testing.TB, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprintf("not an API error: %v", err)
}

// TestMD5OfMessageAttributes: the digest of received attributes is the
// one the Developer Guide's algorithm gives; a known answer (one String
// attribute) checks the algorithm itself.
func TestMD5OfMessageAttributes(t *testing.T) {
	_, c := start(t, false)
	u := create(t, c, "md5")
	ctx := context.Background()
	send, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("body"),
		MessageAttributes: map[string]types.MessageAttributeValue{"attribName1": {DataType: aws.String("String"), StringValue: aws.String("attribValue 1")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(send.MD5OfMessageAttributes), "19e27d4e946b072f3f58da80d94fd778"; got != want {
		t.Errorf("MD5OfMessageAttributes %s, want %s", got, want)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("two"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"b":     {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			"a.num": {DataType: aws.String("Number.int"), StringValue: aws.String("42")},
		}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(u), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 {
		t.Fatalf("%d messages, want 2", len(got.Messages))
	}
	m := got.Messages[1]
	if b := m.MessageAttributes["b"].BinaryValue; string(b) != "\x00\x01\x02\xff" || aws.ToString(m.MessageAttributes["a.num"].StringValue) != "42" {
		t.Errorf("attributes %+v", m.MessageAttributes)
	}
	if aws.ToString(got.Messages[0].MD5OfMessageAttributes) != "19e27d4e946b072f3f58da80d94fd778" || aws.ToString(m.MD5OfMessageAttributes) == "" {
		t.Errorf("received digests %q, %q", aws.ToString(got.Messages[0].MD5OfMessageAttributes), aws.ToString(m.MD5OfMessageAttributes))
	}
}

// TestErrors: what AWS refuses is refused with AWS's code, through the
// SDK, and sqsqueue maps it as it does SQS's.
func TestErrors(t *testing.T) {
	_, c := start(t, false)
	ctx := context.Background()
	u := aws.String(create(t, c, "errs"))
	if _, err := sqsqueue.Open(ctx, c, "absent", sqsqueue.Config{}); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("open a missing queue: %v", err)
	}
	entries := func(n int, f func(i int, e *types.SendMessageBatchRequestEntry)) []types.SendMessageBatchRequestEntry {
		es := make([]types.SendMessageBatchRequestEntry, n)
		for i := range es {
			es[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String("m")}
			if f != nil {
				f(i, &es[i])
			}
		}
		return es
	}
	for _, c2 := range []struct {
		name, want string
		in         *sqs.SendMessageBatchInput
	}{
		{"empty", "AWS.SimpleQueueService.EmptyBatchRequest", &sqs.SendMessageBatchInput{QueueUrl: u, Entries: []types.SendMessageBatchRequestEntry{}}},
		{"eleven", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", &sqs.SendMessageBatchInput{QueueUrl: u, Entries: entries(11, nil)}},
		{"same ids", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", &sqs.SendMessageBatchInput{QueueUrl: u,
			Entries: entries(2, func(_ int, e *types.SendMessageBatchRequestEntry) { e.Id = aws.String("x") })}},
		{"bad id", "AWS.SimpleQueueService.InvalidBatchEntryId", &sqs.SendMessageBatchInput{QueueUrl: u,
			Entries: entries(1, func(_ int, e *types.SendMessageBatchRequestEntry) { e.Id = aws.String("a b") })}},
		{"missing queue", "AWS.SimpleQueueService.NonExistentQueue", &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://x/123456789012/none"), Entries: entries(1, nil)}},
	} {
		if _, err := c.SendMessageBatch(ctx, c2.in); code(err) != c2.want {
			t.Errorf("%s: %v, want %s", c2.name, err, c2.want)
		}
	}
	// Per-entry failures: the others are sent.
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: u, Entries: entries(5, func(i int, e *types.SendMessageBatchRequestEntry) {
		switch i {
		case 1:
			e.MessageGroupId = aws.String(strings.Repeat("g", queue.MaxGroupLen+1))
		case 2:
			e.MessageBody = aws.String("bad \x01 char")
		case 3:
			e.DelaySeconds = 901
		case 4:
			e.MessageGroupId = aws.String(strings.Repeat("g", queue.MaxGroupLen))
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, f := range out.Failed {
		codes[aws.ToString(f.Id)] = aws.ToString(f.Code)
		if !f.SenderFault {
			t.Errorf("entry %s: not the sender's fault", aws.ToString(f.Id))
		}
	}
	if len(out.Successful) != 2 || codes["1"] != "InvalidParameterValue" || codes["2"] != "InvalidMessageContents" || codes["3"] != "InvalidParameterValue" {
		t.Errorf("successful %d, failed %v", len(out.Successful), codes)
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u, MaxNumberOfMessages: 11}); code(err) != "InvalidParameterValue" {
		t.Errorf("receive 11: %v", err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: u, ReceiptHandle: aws.String("!!not a handle!!")}); code(err) != "ReceiptHandleIsInvalid" {
		t.Errorf("delete with a forged handle: %v", err)
	}
	if _, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: u}); code(err) != "UnknownOperationException" {
		t.Errorf("an operation the stand-in does not implement: %v", err)
	}
}

// TestHostileRequests: bodies that are no operation's JSON, wrong types,
// huge numbers and unknown targets get a 4xx with AWS's error shape,
// never a 5xx or a hang-up.
func TestHostileRequests(t *testing.T) {
	s, c := start(t, false)
	u := create(t, c, "hostile")
	bodies := []string{"", "{", "null", "[]", `"x"`, `{"QueueUrl": 7}`, `{"QueueUrl": "` + u + `", "Entries": [{}]}`,
		`{"QueueUrl": "` + u + `", "Entries": [{"Id": "a", "MessageBody": "x", "MessageAttributes": {"n": {}}}]}`,
		`{"QueueUrl": "` + u + `", "Entries": [{"Id": "a", "MessageBody": "x", "MessageAttributes": {"AWS.x": {"DataType": "String", "StringValue": "v"}}}]}`,
		`{"QueueUrl": "` + u + `", "MaxNumberOfMessages": 1e300}`, `{"QueueUrl": "` + u + `", "WaitTimeSeconds": -1}`,
		`{"QueueUrl": "` + u + `", "Entries": [{"Id": "a", "ReceiptHandle": null, "VisibilityTimeout": 99999999}]}`,
		`{"QueueUrl": "%zz", "QueueName": "` + strings.Repeat("q", 81) + `"}`,
		`{"QueueName": "x", "Attributes": {"RedrivePolicy": "{\"deadLetterTargetArn\": \"arn:nope\", \"maxReceiveCount\": 3}"}}`,
		`{"QueueName": "x", "Attributes": {"VisibilityTimeout": "-1"}}`}
	targets := []string{"CreateQueue", "GetQueueUrl", "GetQueueAttributes", "ListQueues", "SendMessage", "SendMessageBatch",
		"ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
		"PurgeQueue", "DeleteQueueX", ""}
	for _, target := range targets {
		for _, body := range bodies {
			req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(body))
			req.Header.Set("X-Amz-Target", "AmazonSQS."+target)
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %q: %v", target, body, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if resp.StatusCode >= 500 {
				t.Errorf("%s %.60q: %d %s", target, body, resp.StatusCode, b)
			}
			if resp.StatusCode >= 400 && (json.Unmarshal(b, &e) != nil || !strings.HasPrefix(e.Type, "com.amazonaws.sqs#") || e.Message == "" ||
				resp.Header.Get("X-Amzn-Query-Error") == "") {
				t.Errorf("%s %.60q: error %d %s without AWS's shape", target, body, resp.StatusCode, b)
			}
		}
	}
}

// TestFairDelivery: on a fair queue the tenant holding the in-flight
// messages is passed over for the other's visible ones; in send order it
// is not.
func TestFairDelivery(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			_, c := start(t, fair)
			q, err := sqsqueue.Open(context.Background(), c, "", sqsqueue.Config{})
			if err == nil || q != nil {
				t.Fatal("opened a queue without a name")
			}
			create(t, c, "work")
			q, err = sqsqueue.Open(context.Background(), c, "work", sqsqueue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var es []queue.SendEntry
			for i := range 50 {
				es = append(es, queue.SendEntry{Body: []byte(fmt.Sprint("a", i)), Group: "acct-a"})
			}
			for i := range 3 {
				es = append(es, queue.SendEntry{Body: []byte(fmt.Sprint("b", i)), Group: "acct-b"})
			}
			if err := q.Send(ctx, es...); err != nil {
				t.Fatal(err)
			}
			first, err := q.Receive(ctx, 10, 0)
			if err != nil || len(first) != 10 || first[0].Group != "acct-a" {
				t.Fatalf("first receive: %d messages (%v)", len(first), err)
			}
			next, err := q.Receive(ctx, 3, 0)
			if err != nil || len(next) != 3 {
				t.Fatalf("second receive: %d messages (%v)", len(next), err)
			}
			want := "acct-b"
			if !fair {
				want = "acct-a"
			}
			for _, m := range next {
				if m.Group != want || m.ReceiveCount != 1 || m.SentAt.IsZero() {
					t.Errorf("second receive: group %q count %d sent %v, want %s", m.Group, m.ReceiveCount, m.SentAt, want)
				}
			}
		})
	}
}

// FuzzServe: whatever the operation and body, the stand-in answers with
// a status below 500 (a malformed request is the sender's fault).
func FuzzServe(f *testing.F) {
	s, c := start(f, true)
	u := create(f, c, "fuzz")
	f.Add("SendMessageBatch", `{"QueueUrl": "`+u+`", "Entries": [{"Id": "a", "MessageBody": "x", "MessageGroupId": "g"}]}`)
	f.Add("ReceiveMessage", `{"QueueUrl": "`+u+`", "MaxNumberOfMessages": 10, "VisibilityTimeout": 0, "MessageAttributeNames": ["x.*"]}`)
	f.Add("ChangeMessageVisibilityBatch", `{"QueueUrl": "`+u+`", "Entries": [{"Id": "a", "ReceiptHandle": "YQ", "VisibilityTimeout": 5}]}`)
	f.Add("CreateQueue", `{"QueueName": "q", "Attributes": {"RedrivePolicy": "{\"maxReceiveCount\": \"5\"}"}}`)
	f.Fuzz(func(t *testing.T, target, body string) {
		if strings.ContainsFunc(target, func(r rune) bool { return r < ' ' || r > '~' }) {
			return // not a header value a client can send
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "AmazonSQS."+target)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %.80q: %d %s", target, body, resp.StatusCode, b)
		}
	})
}

// TestContentLength: answers carry their length, as AWS's do, also one
// larger than a server buffers before it streams: a chunked receive whose
// read broke in the client was retried by the SDK, and the messages of
// its first answer waited out their visibility timeout.
func TestContentLength(t *testing.T) {
	s, c := start(t, false)
	u := create(t, c, "length")
	ctx := context.Background()
	var es []types.SendMessageBatchRequestEntry
	for i := range 10 {
		es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(strings.Repeat("x", 1<<10))})
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: es}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(`{"QueueUrl": "`+u+`", "MaxNumberOfMessages": 10}`))
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(b)) || len(b) < 10<<10 {
		t.Errorf("status %d, Content-Length %d for %d bytes", resp.StatusCode, resp.ContentLength, len(b))
	}
}
