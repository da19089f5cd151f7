package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
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

// bucketCounter is a reverse proxy in front of the emulator that counts
// every request by bucket (path-style S3) and "service Operation"
// (reqcount.Name); requests of other services count under bucket "".
type bucketCounter struct {
	mu  sync.Mutex
	n   map[string]map[string]int64
	url string
}

func startBucketCounter(t *testing.T) *bucketCounter {
	t.Helper()
	u, err := url.Parse(testenv.Endpoint())
	must(t, err)
	c := &bucketCounter{n: map[string]map[string]int64{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, bucket := reqcount.Name(r), ""
		if strings.HasPrefix(name, "s3 ") {
			bucket, _, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		}
		c.mu.Lock()
		if c.n[bucket] == nil {
			c.n[bucket] = map[string]int64{}
		}
		c.n[bucket][name]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c.url = "http://" + ln.Addr().String()
	return c
}

// of returns the counts of the named buckets, summed.
func (c *bucketCounter) of(buckets ...string) map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for _, b := range buckets {
		for k, n := range c.n[b] {
			out[k] += n
		}
	}
	return out
}

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
	for i := range items {
		m.put("1", space, fmt.Sprintf("item-%02d", i), fmt.Sprintf("content %d", i))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	code, out, stderr := run(t, bins["dupproducer"], m.env(), "--runs-database-url", m.dbURL, "--state", state,
		"--frequency", "0", "--lease-table", "none")
	if code != 0 {
		t.Fatalf("dupproducer: exit %d\n%s\n%s", code, out, stderr)
	}
	store := pgruns.New(m.db())
	all, err := store.List(ctx, 10)
	must(t, err)
	if len(all) != 1 || all[0].Enqueued < 2*items {
		t.Fatalf("runs after the producer: %+v, want one dup run of at least %d tasks", all, 2*items)
	}
	id := all[0].ID

	proxy := startBucketCounter(t)
	m.extraEnv = append(m.extraEnv, "AWS_ENDPOINT_URL="+proxy.url)
	// Only the DUP tasks run: the audits they queue would make requests
	// on the same buckets that no run counts.
	m.startWorkman("--queues", "dup-high,dup-low", "--task-types", "DUP")
	var st runs.Status
	testbin.WaitFor(t, 2*time.Minute, "the dup run's completion", func() bool {
		st, err = store.Get(ctx, runs.ProducerDup, id)
		return err == nil && !st.Completed.IsZero()
	})
	obj, err := m.s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(m.prefix + "reports"), Key: aws.String("runs/dupproducer/" + id + ".json")})
	must(t, err)
	body, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	must(t, err)
	var rep runs.Report
	must(t, json.Unmarshal(body, &rep))
	if rep.Cost == nil || rep.Estimate == nil || !strings.HasPrefix(rep.Cost.Basis, "counted") || rep.Done != st.Done || rep.Dead != 0 {
		t.Fatalf("report %+v: want a counted cost and an estimate", rep)
	}
	counted := map[string]int64{}
	for k, n := range rep.Cost.Requests {
		if strings.HasPrefix(k, "s3 ") {
			counted[k] = int64(n)
		}
	}
	seen := proxy.of(m.bucket1, m.bucket2)
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
	if c, p := int64(rep.Cost.Requests["sqs SendMessageBatch"]), proxy.of("")["sqs SendMessageBatch"]; c != p || c == 0 {
		t.Errorf("the report counts %d SQS SendMessageBatch, the proxy saw %d", c, p)
	}
	if got := proxy.of(m.prefix + "reports"); got["s3 PutObject"] != 2 {
		t.Errorf("the reports bucket saw %v, want the report's two PUTs (JSON, CSV)", got)
	}
	if rep.Cost.Total <= 0 || rep.Cost.ByService["s3"] <= 0 {
		t.Errorf("report cost %+v: want the counted S3 requests priced", rep.Cost)
	}
}
