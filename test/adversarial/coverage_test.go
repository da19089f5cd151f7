package adversarial

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TestCoverageCountsOnlyFreshVerdicts: the real millctl and bitproducer
// against the emulator's store 1 and PostgreSQL. Three spaces of two
// indexed copies: "fresh" (both read 5 days ago), "stale" (one read 120
// days ago, past the 90-day target) and "new", whose bit-log rows are none
// of them a verdict — a comparison of stored checksums only, an ERROR, a
// row without a method (written before methods were recorded) — and whose
// only fresh-looking row is of a copy the content index does not hold.
// millctl fixity coverage counts new's copies as never verified and
// stale's old one as overdue; the bitproducer with --skip-covered 30d
// leaves fresh out, names it in its summary, logs the store's figures, and
// queues its first bite from new, the most overdue space.
func TestCoverageCountsOnlyFreshVerdicts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl", "bitproducer")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	idx, blog := pgcontentindex.New(m.db()), m.bitLog()
	now := time.Now()
	for _, sp := range []string{"fresh", "stale", "new"} {
		for _, id := range []string{"a", "b"} {
			info := m.put("1", sp, id, sp+"/"+id)
			_, err := idx.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: sp, ContentID: id},
				Checksum: info.Checksum, Modified: now.Add(-200 * 24 * time.Hour)})
			must(t, err)
		}
	}
	day := 24 * time.Hour
	for i, r := range []bitlog.Row{
		{SpaceID: "fresh", ContentID: "a", Method: bitlog.MethodRead, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-5 * day)},
		{SpaceID: "fresh", ContentID: "b", Method: bitlog.MethodRead, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-5 * day)},
		{SpaceID: "stale", ContentID: "a", Method: bitlog.MethodRead, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-5 * day)},
		{SpaceID: "stale", ContentID: "b", Method: bitlog.MethodRead, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-120 * day)},
		{SpaceID: "new", ContentID: "a", Method: bitlog.MethodStored, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-time.Hour)},
		{SpaceID: "new", ContentID: "a", Method: bitlog.MethodRead, Result: bitlog.ResultError, CheckedAt: now.Add(-time.Hour)},
		{SpaceID: "new", ContentID: "b", Result: bitlog.ResultSuccess, CheckedAt: now.Add(-time.Hour)},
		{SpaceID: "new", ContentID: "ghost", Method: bitlog.MethodRead, Result: bitlog.ResultSuccess, CheckedAt: now.Add(-time.Hour)},
	} {
		r.RunID, r.Account, r.StoreID, r.Case = "2026010"+string(rune('1'+i))+"T000000Z", "acme", "1", 1
		must(t, blog.Record(ctx, r))
	}

	c := testbin.Run(t, time.Minute, testbin.Spec{Path: bins["millctl"], Args: []string{"fixity", "coverage", "--account", "acme", "--store", "1", "--json"}, Env: m.env()})
	if err := c.Err(); err != nil {
		t.Fatalf("millctl fixity coverage: %v\n%s", err, c.Output())
	}
	got := map[string][4]int64{}
	for _, l := range strings.Split(strings.TrimSpace(c.Stdout()), "\n") {
		var x struct {
			Space         string `json:"space_id"`
			Copies        int64  `json:"copies"`
			Within        int64  `json:"within_target"`
			Overdue       int64  `json:"overdue"`
			NeverVerified int64  `json:"never_verified"`
		}
		must(t, json.Unmarshal([]byte(l), &x))
		got[x.Space] = [4]int64{x.Copies, x.Within, x.Overdue, x.NeverVerified}
	}
	for sp, want := range map[string][4]int64{"fresh": {2, 2, 0, 0}, "stale": {2, 1, 1, 0}, "new": {2, 0, 2, 2}, "": {6, 3, 3, 2}} {
		if got[sp] != want {
			t.Errorf("coverage of %q: copies, within, overdue, never = %v, want %v\n%s", sp, got[sp], want, c.Stdout())
		}
	}

	out := m.runBitproducer(t, bins["bitproducer"], "--include", m.includeFile(t, "/acme/1/*"), "--skip-covered", "30d",
		"--bite-size", "1", "--max-queue-size", "1")
	for _, want := range []string{"acme/1/fresh: every copy (2) is within its fixity target for at least 30d more",
		`"msg":"fixity coverage","account":"acme","store_id":"1","spaces":3,"copies":6,"within":3,"overdue":3,"never_verified":2,`} {
		if !strings.Contains(out, want) {
			t.Errorf("bitproducer output lacks %q:\n%s", want, out)
		}
	}
	msgs, err := m.sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.urls[queue.KeyBit]), MaxNumberOfMessages: 10})
	must(t, err)
	if len(msgs.Messages) != 1 {
		t.Fatalf("%d BIT tasks after one bite of one item, want 1", len(msgs.Messages))
	}
	tk, err := task.Decode([]byte(aws.ToString(msgs.Messages[0].Body)))
	must(t, err)
	if tk.Get("spaceId") != "new" || tk.Get("contentId") != "a" {
		t.Errorf("the first BIT is of %s/%s, want new/a (the never-verified space first)", tk.Get("spaceId"), tk.Get("contentId"))
	}
}

// runBitproducer runs the bitproducer binary once (--frequency 0, its own
// state file, no lease) with args and returns its output; exit 0 wanted.
func (m *mill) runBitproducer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bin, Args: append([]string{"--frequency", "0", "--lease-table", "none", "--progress", "off",
		"--state", m.conf + "/coverage-state.json"}, args...), Env: m.env()})
	if err := c.Err(); err != nil {
		t.Fatalf("bitproducer %v: %v\n%s", args, err, c.Output())
	}
	t.Logf("bitproducer %v:\n%s", args, c.Output())
	return c.Output()
}
