package sqsqueue_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// fakeAPI answers batch calls from a script of per-entry failures; it needs
// no service.
type fakeAPI struct {
	sqsqueue.API
	mu sync.Mutex
	// fail decides an entry's failure on a given attempt (0-based) of that
	// entry; nil = success.
	fail     func(id string, attempt int) *types.BatchResultErrorEntry
	attempts map[string]int
	calls    [][]string // entry Ids per call
}

func (f *fakeAPI) GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://fake/q")}, nil
}

func (f *fakeAPI) answer(ids []string) []types.BatchResultErrorEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attempts == nil {
		f.attempts = map[string]int{}
	}
	f.calls = append(f.calls, ids)
	var out []types.BatchResultErrorEntry
	for _, id := range ids {
		if e := f.fail(id, f.attempts[id]); e != nil {
			e.Id = aws.String(id)
			out = append(out, *e)
		}
		f.attempts[id]++
	}
	return out
}

func (f *fakeAPI) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var ids []string
	for _, e := range in.Entries {
		ids = append(ids, *e.Id)
	}
	return &sqs.SendMessageBatchOutput{Failed: f.answer(ids)}, nil
}

func (f *fakeAPI) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	var ids []string
	for _, e := range in.Entries {
		ids = append(ids, *e.Id)
	}
	return &sqs.DeleteMessageBatchOutput{Failed: f.answer(ids)}, nil
}

func (f *fakeAPI) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	var ids []string
	for _, e := range in.Entries {
		ids = append(ids, *e.Id)
	}
	return &sqs.ChangeMessageVisibilityBatchOutput{Failed: f.answer(ids)}, nil
}

func entryErr(code string, sender bool) *types.BatchResultErrorEntry {
	return &types.BatchResultErrorEntry{Code: aws.String(code), Message: aws.String(code), SenderFault: sender}
}

func openFake(t *testing.T, f *fakeAPI) *sqsqueue.Queue {
	t.Helper()
	q, err := sqsqueue.Open(context.Background(), f, "fake", sqsqueue.Config{RetryBackoff: 1})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestSendRetriesServiceFaultsAndReportsSenderFaults(t *testing.T) {
	f := &fakeAPI{fail: func(id string, attempt int) *types.BatchResultErrorEntry {
		switch id {
		case "3": // transient: fails twice, then succeeds
			if attempt < 2 {
				return entryErr("InternalError", false)
			}
		case "12": // the sender's fault: never retried
			return entryErr("InvalidParameterValue", true)
		case "17": // keeps failing: reported after the retries
			return entryErr("ServiceUnavailable", false)
		}
		return nil
	}}
	q := openFake(t, f)
	entries := make([]queue.SendEntry, 23)
	for i := range entries {
		entries[i].Body = []byte("x" + strconv.Itoa(i))
	}
	err := q.Send(context.Background(), entries...)
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 2 || be.Failed[12] == nil || be.Failed[17] == nil {
		t.Fatalf("send: %v, want entries 12 and 17 failed", err)
	}
	if !errors.Is(be.Failed[12], queue.ErrInvalid) {
		t.Errorf("entry 12: %v, want queue.ErrInvalid", be.Failed[12])
	}
	var ee *sqsqueue.EntryError
	if !errors.As(be.Failed[17], &ee) || ee.Code != "ServiceUnavailable" || ee.SenderFault {
		t.Errorf("entry 17: %#v", be.Failed[17])
	}
	if f.attempts["3"] != 3 || f.attempts["12"] != 1 || f.attempts["17"] != 1+sqsqueue.DefaultRetries {
		t.Errorf("attempts: 3→%d 12→%d 17→%d", f.attempts["3"], f.attempts["12"], f.attempts["17"])
	}
	for _, c := range f.calls {
		if len(c) > queue.MaxBatch {
			t.Errorf("a request carried %d entries", len(c))
		}
	}
}

func TestDeleteAndReleaseTreatGoneAsSuccess(t *testing.T) {
	f := &fakeAPI{fail: func(id string, attempt int) *types.BatchResultErrorEntry {
		switch id {
		case "0":
			return entryErr("ReceiptHandleIsInvalid", true)
		case "1":
			return entryErr("AWS.SimpleQueueService.MessageNotInflight", true)
		}
		return nil
	}}
	q := openFake(t, f)
	ms := []*queue.Message{{ReceiptHandle: "a"}, {ReceiptHandle: "b"}, {ReceiptHandle: "c"}}
	ctx := context.Background()
	if err := q.Delete(ctx, ms[0], ms[2]); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := q.Release(ctx, ms...); err != nil {
		t.Errorf("release: %v", err)
	}
	err := q.ChangeVisibility(ctx, queue.VisibilityChange{Message: ms[0], Timeout: 1}, queue.VisibilityChange{Message: ms[1], Timeout: 1})
	if !errors.Is(err, queue.ErrReceiptInvalid) || len(queue.FailedIndexes(err, 2)) != 2 {
		t.Errorf("change visibility: %v", err)
	}
}

// TestOpenValidatesConfig: a Config out of range is refused by Open, every
// problem named, before any request (it used to be clamped silently).
func TestOpenValidatesConfig(t *testing.T) {
	f := &urlCounter{}
	_, err := sqsqueue.Open(context.Background(), f, "fake", sqsqueue.Config{
		RetryBackoff: -1, MaxMessageBytes: 2 << 20, MaxBatchBytes: 1, CallTimeout: -time.Second,
	})
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("err = %v, want queue.ErrInvalid", err)
	}
	for _, want := range []string{"Config.RetryBackoff", "Config.MaxMessageBytes", "Config.MaxBatchBytes", "Config.CallTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if f.n != 0 {
		t.Errorf("%d requests made for an invalid config", f.n)
	}
	// Zero fields take the defaults; a batch limit below a raised message
	// limit follows it.
	if _, err := sqsqueue.Open(context.Background(), f, "fake", sqsqueue.Config{MaxMessageBytes: 1 << 20}); err != nil {
		t.Fatalf("raised message limit with a default batch limit: %v", err)
	}
}

// urlCounter counts GetQueueUrl calls.
type urlCounter struct {
	fakeAPI
	n int
}

func (u *urlCounter) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, o ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	u.n++
	return u.fakeAPI.GetQueueUrl(ctx, in, o...)
}

// TestSendGroups: an entry's Group goes out as its MessageGroupId; one SQS
// would refuse fails with queue.ErrInvalid and is never sent.
func TestSendGroups(t *testing.T) {
	f := &groupAPI{}
	q, err := sqsqueue.Open(context.Background(), f, "fake", sqsqueue.Config{RetryBackoff: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = q.Send(context.Background(),
		queue.SendEntry{Body: []byte("a"), Group: "acme"},
		queue.SendEntry{Body: []byte("b")},
		queue.SendEntry{Body: []byte("c"), Group: "no spaces allowed"})
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 1 || !errors.Is(be.Failed[2], queue.ErrInvalid) {
		t.Fatalf("send: %v, want entry 2 invalid", err)
	}
	if len(f.groups) != 2 || f.groups["0"] != "acme" || f.groups["1"] != "" {
		t.Fatalf("MessageGroupIds sent by entry: %v", f.groups)
	}
}

// groupAPI records the MessageGroupId of each entry sent.
type groupAPI struct {
	fakeAPI
	groups map[string]string
}

func (g *groupAPI) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if g.groups == nil {
		g.groups = map[string]string{}
	}
	for _, e := range in.Entries {
		g.groups[aws.ToString(e.Id)] = aws.ToString(e.MessageGroupId)
	}
	g.fail = func(string, int) *types.BatchResultErrorEntry { return nil }
	return g.fakeAPI.SendMessageBatch(ctx, in, o...)
}
