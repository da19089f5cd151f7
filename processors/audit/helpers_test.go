package audit_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

// policies is a policy.Reader over parsed policies; every account of the
// map is listed.
type policies map[string]*policy.Policy

func (p policies) Accounts(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(p)), nil
}

func (p policies) Policy(_ context.Context, account string) (*policy.Policy, error) {
	if pol, ok := p[account]; ok {
		return pol, nil
	}
	return nil, policy.ErrNotFound
}

func mustPolicy(t testing.TB, js string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test-duplication-policy.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// oneToTwoAndThree duplicates every space of store 1 to stores 2 and 3.
const oneToTwoAndThree = `{"defaultPolicies":[{"srcStoreId":"1","destStoreId":"2"},{"srcStoreId":"1","destStoreId":"3"}]}`

// countingIndex counts the index writes that changed a row.
type countingIndex struct {
	contentindex.Index
	mu      sync.Mutex
	applied int
}

func (c *countingIndex) Upsert(ctx context.Context, e contentindex.Entry) (bool, error) {
	ok, err := c.Index.Upsert(ctx, e)
	if ok {
		c.mu.Lock()
		c.applied++
		c.mu.Unlock()
	}
	return ok, err
}

func (c *countingIndex) Applied() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied
}

// recordingNotifier records new spaces.
type recordingNotifier struct {
	mu     sync.Mutex
	spaces []string
}

func (n *recordingNotifier) Notify(_ context.Context, e notify.Event) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Type == notify.EventSpaceCreated {
		n.spaces = append(n.spaces, e.Attributes[notify.AttrSpaceID])
	}
	return nil
}

// dupsOf decodes the DUP task bodies of messages.
func dupsOf(t testing.TB, msgs [][]byte) []task.Dup {
	t.Helper()
	var out []task.Dup
	for _, b := range msgs {
		tk, err := task.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := task.DupFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// drain receives every visible message of q.
func drain(t testing.TB, q queue.Queue) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		msgs, err := q.Receive(context.Background(), queue.MaxBatch, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			out = append(out, m.Body)
		}
		if err := q.Delete(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
}

func testLogger(t testing.TB) *slog.Logger {
	return slogtest.New(t, slog.LevelDebug)
}
