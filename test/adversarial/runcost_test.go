package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/reqcount"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
)

// TestRunCostCounted: a duplication run's completion report counts the AWS
// requests its tasks made. The real dupproducer queues the run; the real
// Workman runs its DUP tasks with every AWS request going through a
// counting proxy; the report's counted S3 requests equal, operation by
// operation, the requests the proxy saw on the two S3 stores' buckets
// (store 3 is a directory: not AWS, not counted), and Workman's own
// requests (the report's two PUTs in the reports bucket) are not the
// tasks'. So do the SQS sends of the audits the copies queue.
func TestRunCostCounted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "dupproducer", "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	const items = 12
	store, id := m.dupRun(t, bins["dupproducer"], items)

	proxy := reqcount.Start(t, testenv.Endpoint())
	m.extraEnv = append(m.extraEnv, "AWS_ENDPOINT_URL="+proxy.URL())
	// Only the DUP tasks run: the audits they queue would make requests
	// on the same buckets that no run counts.
	m.startWorkman("--queues", "dup-high,dup-low", "--task-types", "DUP")
	var st runs.Status
	var err error
	testbin.WaitFor(t, 2*time.Minute, "the dup run's completion", func() bool {
		st, err = store.Get(ctx, runs.ProducerDup, id)
		return err == nil && !st.Completed.IsZero()
	})
	rep := m.runReport(t, id)
	if rep.Cost == nil || rep.Estimate == nil || !strings.HasPrefix(rep.Cost.Basis, "counted") || rep.Done != st.Done || rep.Dead != 0 {
		t.Fatalf("report %+v: want a counted cost and an estimate", rep)
	}
	counted := map[string]int{}
	for k, n := range rep.Cost.Requests {
		if strings.HasPrefix(k, "s3 ") {
			counted[k] = int(n)
		}
	}
	seen := proxy.Buckets(m.bucket1, m.bucket2)
	t.Logf("counted %v; the proxy saw %v on the stores' buckets; cost $%.8f, estimate $%.8f",
		rep.Cost.Requests, seen, rep.Cost.Total, rep.Estimate.Total)
	if !maps.Equal(counted, seen) {
		t.Errorf("the report counts S3 requests %v, the proxy saw %v on the stores' buckets", counted, seen)
	}
	if counted["s3 HeadObject"] < 2*items {
		t.Errorf("%d HEADs counted for %d copies to S3: want at least a source and a destination HEAD a copy", counted["s3 HeadObject"], items)
	}
	// The audits the copies queue are the tasks' too (no retry nor dead
	// letter was sent: every task succeeded at its first attempt).
	if c, p := int(rep.Cost.Requests["sqs SendMessageBatch"]), proxy.Take()["sqs SendMessageBatch"]; c != p || c == 0 {
		t.Errorf("the report counts %d SQS SendMessageBatch, the proxy saw %d", c, p)
	}
	if got := proxy.Buckets(m.prefix + "reports"); got["s3 PutObject"] != 2 {
		t.Errorf("the reports bucket saw %v, want the report's two PUTs (JSON, CSV)", got)
	}
	if rep.Cost.Total <= 0 || rep.Cost.ByService["s3"] <= 0 {
		t.Errorf("report cost %+v: want the counted S3 requests priced", rep.Cost)
	}
}

// dupRun puts items into store 1 and runs the real dupproducer once, which
// records one duplication run of at least two tasks an item: the record of
// runs, and the run's ID.
func (m *mill) dupRun(t *testing.T, bin string, items int) (*pgruns.Store, string) {
	t.Helper()
	for i := range items {
		m.put("1", space, fmt.Sprintf("item-%02d", i), fmt.Sprintf("content %d", i))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	code, out, stderr := run(t, bin, m.env(), "--runs-database-url", m.dbURL, "--state", state,
		"--frequency", "0", "--lease-table", "none")
	if code != 0 {
		t.Fatalf("dupproducer: exit %d\n%s\n%s", code, out, stderr)
	}
	store := pgruns.New(m.db())
	all, err := store.List(m.ctx, 10)
	must(t, err)
	if len(all) != 1 || all[0].Producer != runs.ProducerDup || all[0].Listed.IsZero() || all[0].Enqueued < 2*int64(items) {
		t.Fatalf("runs after the producer: %+v, want one listed dup run of at least %d tasks", all, 2*items)
	}
	return store, all[0].ID
}

// runReport reads the JSON completion report of dup run id from the
// reports bucket.
func (m *mill) runReport(t *testing.T, id string) runs.Report {
	t.Helper()
	obj, err := m.s3c.GetObject(m.ctx, &s3.GetObjectInput{Bucket: aws.String(m.prefix + "reports"), Key: aws.String("runs/dupproducer/" + id + ".json")})
	must(t, err)
	body, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	must(t, err)
	var rep runs.Report
	must(t, json.Unmarshal(body, &rep))
	return rep
}
