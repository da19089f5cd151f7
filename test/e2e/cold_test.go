package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
)

// coldFleet is the fleet of a cold-copy end-to-end test: account acme
// with store 1 (S3, hot, primary) and store 2 (S3, archived copies,
// checked by an archived method), Mill's buckets, tables and queues
// (removed when the test ends), the real binaries, and a proxy that
// counts every request Mill's processes send to the emulator.
type coldFleet struct {
	t   *testing.T
	ctx context.Context

	bins                            map[string]string
	prefix, dbURL, auditTable, conf string
	hotBucket, coldBucket           string
	s3c                             *s3.Client
	sqsc                            *sqs.Client
	// env is the environment of Mill's processes: a test may add to it
	// before it runs them.
	env     []string
	counted *counter

	pool      *pgxpool.Pool
	bitLog    *pgbitlog.Log
	index     *pgcontentindex.Index
	alog      *dynamoauditlog.Log
	hot, cold *s3store.Store
}

// newColdFleet builds the binaries, names the fleet's resources (each
// cleaned up at the end), creates the two stores' buckets, writes the
// account's configuration (store 2's archived copies checked by
// archivedMethod, yearly) and starts the counting proxy. Mill's own
// resources are made by setup.
func newColdFleet(ctx context.Context, t *testing.T, archivedMethod string) *coldFleet {
	t.Helper()
	cfg := testenv.AWS(t)
	f := &coldFleet{t: t, ctx: ctx, dbURL: testenv.Schema(t)}
	f.bins = testbin.Build(t, "millctl", "workman", "bitproducer")

	f.prefix = testenv.Prefix(t)
	f.sqsc, f.s3c = cfg.SQS(), cfg.S3()
	ddb := cfg.DynamoDB()
	testenv.CleanupQueues(t, f.sqsc, f.prefix)
	f.auditTable = f.prefix + "audit-log"
	names := map[string]string{"MILL_CONFIG_BUCKET": f.prefix + "config", "MILL_STATE_BUCKET": f.prefix + "state", "MILL_CLAIMS_BUCKET": f.prefix + "state",
		"MILL_REPORTS_BUCKET": f.prefix + "reports", "MILL_AUDIT_TABLE": f.auditTable, "MILL_LEASE_TABLE": f.prefix + "leases",
		"MILL_FLEET_TABLE": f.prefix + "fleet"}
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"]} {
		testenv.CleanupBucket(t, f.s3c, b)
	}
	f.hotBucket, f.coldBucket = f.bucket("hot"), f.bucket("cold")
	for _, table := range []string{f.auditTable, names["MILL_LEASE_TABLE"], names["MILL_FLEET_TABLE"]} {
		testenv.CleanupTable(t, ddb, table)
	}

	f.conf = t.TempDir()
	f.writeConfig("accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1",
   "fixity": {"archivedMethod": %q, "archivedInterval": "365d"}}]}]}`, f.hotBucket, f.coldBucket, archivedMethod))
	f.writeConfig("duplication-accounts.json", `[]`)

	var proxyURL string
	f.counted, proxyURL = startCounter(t, os.Getenv("AWS_ENDPOINT_URL"))
	f.env = testbin.Env("MILL_QUEUE_PREFIX="+f.prefix, "MILL_CONFIG_DIR="+f.conf, "MILL_DATABASE_URL="+f.dbURL, "AWS_ENDPOINT_URL="+proxyURL)
	for k, v := range names {
		f.env = append(f.env, k+"="+v)
	}

	var err error
	if f.hot, err = s3store.New(f.s3c, s3store.Config{Bucket: f.hotBucket, Prefix: "mill/"}); err != nil {
		t.Fatal(err)
	}
	if f.cold, err = s3store.New(f.s3c, s3store.Config{Bucket: f.coldBucket, Prefix: "mill/"}); err != nil {
		t.Fatal(err)
	}
	if f.pool, err = pgxpool.New(ctx, f.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.pool.Close)
	f.bitLog, f.index, f.alog = pgbitlog.New(f.pool), pgcontentindex.New(f.pool), dynamoauditlog.New(ddb, f.auditTable)
	return f
}

// bucket creates the bucket prefix+name, removed when the test ends.
func (f *coldFleet) bucket(name string) string {
	f.t.Helper()
	b := f.prefix + name
	if _, err := f.s3c.CreateBucket(f.ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		f.t.Fatal(err)
	}
	testenv.CleanupBucket(f.t, f.s3c, b)
	return b
}

func (f *coldFleet) writeConfig(name, body string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.conf, name), []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// setup makes Mill's queues, tables and database schema (millctl setup).
func (f *coldFleet) setup() {
	f.t.Helper()
	f.run("millctl", "setup", "--skip-db=false", "--database-url", f.dbURL, "--queue-prefix", f.prefix, "--audit-table", f.auditTable)
}

// run runs one of the binaries to its end in the fleet's environment; a
// failure ends the test.
func (f *coldFleet) run(bin string, args ...string) *testbin.Proc {
	f.t.Helper()
	c := testbin.Run(f.t, 3*time.Minute, testbin.Spec{Path: f.bins[bin], Args: args, Env: f.env})
	if err := c.Err(); err != nil {
		f.t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", bin, strings.Join(args, " "), err, c.Stdout(), c.Stderr())
	}
	return c
}

// bitproducer runs one invocation of bitproducer on the fleet's queues
// and database and returns all it wrote (its log included).
func (f *coldFleet) bitproducer(args ...string) string {
	f.t.Helper()
	c := f.run("bitproducer", append([]string{"--queue-prefix", f.prefix, "--database-url", f.dbURL}, args...)...)
	return c.Stdout() + c.Stderr()
}

// startWorkman starts workman on the given task types and queues; it is
// stopped when the test ends.
func (f *coldFleet) startWorkman(types, queues string) *testbin.Proc {
	f.t.Helper()
	return testbin.Start(f.t, testbin.Spec{Path: f.bins["workman"], Args: []string{"--task-types", types, "--queues", queues,
		"--config-dir", f.conf, "--database-url", f.dbURL, "--audit-table", f.auditTable, "--queue-prefix", f.prefix,
		"--http-addr", "", "--cloudwatch=false", "--receive-wait", "1s", "--recheck-delay", "2s",
		"--queue-backoff-min", "250ms", "--queue-backoff-max", "1s", "--long-poll-wait", "1s", "--grace-period", "5s"}, Env: f.env})
}

// depth is the number of messages in the fleet's queue key, -1 when it
// cannot be read.
func (f *coldFleet) depth(key string) int {
	o, err := f.sqsc.GetQueueUrl(f.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(f.prefix, key))})
	if err != nil {
		f.t.Fatal(err)
	}
	d, err := testenv.QueueDepth(f.ctx, f.sqsc, aws.ToString(o.QueueUrl))
	if err != nil {
		return -1
	}
	return d
}

// coldSeed describes the items a test seeds in both stores.
type coldSeed struct {
	space string
	n     int
	id    func(i int) string
	body  func(i int) []byte
	class func(i int) string // the storage class of store 2's copy
}

// seed writes the items directly into both stores (not through Mill):
// each item's copy in store 1 (the default class) and in store 2 (in
// s.class), with its audit entry and index row, an hour old. It returns
// the keys of store 2's copies.
func (f *coldFleet) seed(s coldSeed) (archivedKeys map[string]bool) {
	f.t.Helper()
	seedAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	archivedKeys = map[string]bool{}
	for _, st := range []struct {
		id    string
		prov  storage.Provider
		class func(int) string
	}{{"1", f.hot, func(int) string { return "" }}, {"2", f.cold, s.class}} {
		if err := st.prov.CreateSpace(f.ctx, s.space); err != nil {
			f.t.Fatal(err)
		}
		for i := range s.n {
			b := s.body(i)
			sum := md5hex(b)
			size := int64(len(b))
			if _, err := st.prov.Put(f.ctx, s.space, s.id(i), bytes.NewReader(b), storage.PutOptions{Size: size, Checksum: sum,
				MimeType: "image/tiff", StorageClass: st.class(i)}); err != nil {
				f.t.Fatal(err)
			}
			if _, err := f.alog.Put(f.ctx, auditlog.Entry{Account: account, StoreID: st.id, SpaceID: s.space, ContentID: s.id(i),
				Action: task.ActionAddContent, UserID: "seed", Time: seedAt, Checksum: sum, MimeType: "image/tiff", Size: &size,
				Properties: map[string]string{}, StoreType: "s3"}); err != nil {
				f.t.Fatal(err)
			}
			if _, err := f.index.Upsert(f.ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: st.id, SpaceID: s.space, ContentID: s.id(i)},
				Checksum: sum, Size: &size, MimeType: "image/tiff", Properties: map[string]string{}, Modified: seedAt}); err != nil {
				f.t.Fatal(err)
			}
			if st.id == "2" {
				archivedKeys["mill/"+s.space+"/"+s.id(i)] = true
			}
		}
	}
	return archivedKeys
}

// coverage runs `millctl fixity coverage --account acme --json` with
// args and returns its store lines by store id; a line that is not JSON
// ends the test.
func (f *coldFleet) coverage(args ...string) map[string]map[string]any {
	f.t.Helper()
	out := f.run("millctl", append([]string{"fixity", "coverage", "--account", account, "--json"}, args...)...).Stdout()
	stores := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var c map[string]any
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			f.t.Fatalf("fixity coverage --json: %q: %v", l, err)
		}
		if c["level"] == "store" {
			id, _ := c["store_id"].(string)
			stores[id] = c
		}
	}
	return stores
}

// storeCoverage is coverage's line of one store (--store); its absence
// ends the test.
func (f *coldFleet) storeCoverage(store string) map[string]any {
	f.t.Helper()
	c := f.coverage("--store", store)[store]
	if c == nil {
		f.t.Fatalf("millctl fixity coverage --store %s: no store line", store)
	}
	return c
}

// waitNextSecond lets the current second pass: S3's modification times
// and bitproducer's run ids are whole seconds.
func waitNextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
}

// counter is a request-counting HTTP proxy between Mill's processes and
// the emulator: it records the method, bucket and key of every request.
type counter struct {
	mu   sync.Mutex
	reqs []countedReq
}

type countedReq struct{ method, bucket, key, query string }

func startCounter(t *testing.T, target string) (*counter, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/")
		bucket, key, _ := strings.Cut(path, "/")
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, countedReq{r.Method, bucket, key, r.URL.RawQuery})
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c, "http://" + ln.Addr().String()
}

// count returns how many requests match.
func (c *counter) count(match func(countedReq) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.reqs {
		if match(r) {
			n++
		}
	}
	return n
}

func enableBucketVersioning(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}
