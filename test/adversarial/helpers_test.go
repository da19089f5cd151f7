package adversarial

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// The account the attacks aim at: acme, whose policy duplicates store 1
// (S3) to stores 2 (S3, versioned bucket) and 3 (filesystem), and ignores
// space "scratch".
const (
	acmePolicy = `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}], "spacesToIgnore": ["scratch"]}`
	space      = "photos"
)

// mill is one Mill deployment on a test prefix: queues, buckets, an
// audit-log table, a database schema, a configuration directory, the
// three stores of acme opened in-process, and places outside every store
// an escape would reach.
type mill struct {
	t       *testing.T
	pool    *pgxpool.Pool // db()
	ctx     context.Context
	cfg     *awsconfig.Config
	prefix  string
	s3c     *s3.Client
	sqsc    *sqs.Client
	conf    string // configuration directory
	dbURL   string
	table   string // audit log
	claims  *wiring.Claims
	urls    map[string]string // queue key → URL
	buckets []string          // every bucket of the deployment
	dirs    []string          // every directory to compare (store roots, the outside)
	// bucket1, bucket2: stores 1 and 2; root3: store 3; outside: a
	// directory no store may touch (symbolic links in store 3 point there).
	bucket1, bucket2, root3, outside, claimsBucket string
	stores                                         map[string]storage.Provider
	extraAccounts                                  string          // more accounts.json entries
	extraEnv                                       []string        // more variables of the children's environment
	resends                                        resends         // of sqsc's sends (resend_test.go)
	lettered                                       map[string]bool // message IDs deadLetters handed over
}

func newMill(t *testing.T, ctx context.Context) *mill {
	t.Helper()
	m := &mill{t: t, ctx: ctx, cfg: testenv.AWS(t), prefix: testenv.Prefix(t), urls: map[string]string{}}
	m.s3c, m.sqsc = m.cfg.S3(), m.cfg.SQS(m.resends.Option)
	testenv.CleanupQueues(t, m.sqsc, m.prefix)
	for _, k := range queue.AllKeys {
		u, err := (setup.Queue{Client: m.sqsc, QueueName: queue.Name(m.prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx)
		must(t, err)
		m.urls[k] = u
	}
	m.bucket1, m.bucket2, m.claimsBucket = m.prefix+"store1", m.prefix+"store2", m.prefix+"state"
	for _, b := range []string{m.bucket1, m.bucket2, m.claimsBucket, m.prefix + "reports", m.prefix + "bystander"} {
		_, err := m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
		must(t, err)
		testenv.CleanupBucket(t, m.s3c, b)
		m.buckets = append(m.buckets, b)
	}
	_, err := m.s3c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(m.bucket2),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
	must(t, err)
	m.claims = &wiring.Claims{Bucket: m.claimsBucket, Prefix: setup.DefaultClaimsPrefix}

	tmp := t.TempDir()
	m.root3, m.outside, m.conf = filepath.Join(tmp, "store3"), filepath.Join(tmp, "outside"), filepath.Join(tmp, "config")
	for _, d := range []string{m.root3, m.outside, m.conf} {
		must(t, os.MkdirAll(d, 0o755))
	}
	m.dirs = []string{m.root3, m.outside}

	m.dbURL = testenv.Schema(t)
	pool, err := pgxpool.New(ctx, m.dbURL)
	must(t, err)
	_, err = milldb.Up(ctx, pool)
	pool.Close()
	must(t, err)
	m.table = m.prefix + "audit"
	ddb := m.cfg.DynamoDB()
	testenv.CleanupTable(t, ddb, m.table)
	_, err = ddb.CreateTable(ctx, dynamoauditlog.CreateTableInput(m.table))
	must(t, err)

	m.stores = map[string]storage.Provider{}
	for id, b := range map[string]string{"1": m.bucket1, "2": m.bucket2} {
		p, err := s3store.New(m.s3c, s3store.Config{Bucket: b, Prefix: "mill/"})
		must(t, err)
		m.stores[id] = p
	}
	p3, err := fsstore.New(m.root3)
	must(t, err)
	m.stores["3"] = p3
	return m
}

// db is the mill's PostgreSQL pool (opened on first use, closed when the
// test ends), where Workman and the producers keep the bit log and the
// statistics.
func (m *mill) db() *pgxpool.Pool {
	m.t.Helper()
	if m.pool == nil {
		pool, err := pgxpool.New(m.ctx, m.dbURL)
		must(m.t, err)
		m.t.Cleanup(pool.Close)
		m.pool = pool
	}
	return m.pool
}

// bitLog is the mill's bit log in PostgreSQL.
func (m *mill) bitLog() *pgbitlog.Log { return pgbitlog.New(m.db()) }

// writeConfig writes the registry and the policies: acme as above, plus
// m.extraAccounts, listed in duplication-accounts.json with listed.
func (m *mill) writeConfig(listed []string, files map[string]string) {
	m.t.Helper()
	reg := fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "3", "kind": "fs", "root": %q}]}%s]}`, m.bucket1, m.bucket2, m.root3, m.extraAccounts)
	m.write("accounts.json", reg)
	m.write("duplication-accounts.json", `["`+strings.Join(append([]string{"acme"}, listed...), `", "`)+`"]`)
	m.write("acme-duplication-policy.json", acmePolicy)
	for name, body := range files {
		m.write(name, body)
	}
}

func (m *mill) write(name, body string) {
	m.t.Helper()
	must(m.t, os.WriteFile(filepath.Join(m.conf, name), []byte(body), 0o644))
}

// put writes an item into a store (not audited: the seed).
func (m *mill) put(store, sp, id, body string) *storage.Info {
	m.t.Helper()
	p := m.stores[store]
	must(m.t, p.CreateSpace(m.ctx, sp))
	info, err := p.Put(m.ctx, sp, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain"})
	must(m.t, err)
	return info
}

// read returns an item's bytes, or an error.
func (m *mill) read(store, sp, id string) ([]byte, error) {
	rc, _, err := m.stores[store].Get(m.ctx, sp, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// worker is a running workman.
type worker struct {
	*testbin.Proc
	addr   string // --http-addr
	record string // --noop-record
}

// startWorkman runs workman on every work queue and every task type.
func (m *mill) startWorkman(extra ...string) *worker {
	m.t.Helper()
	w := &worker{addr: testbin.FreeAddr(m.t), record: filepath.Join(m.t.TempDir(), "noop.record")}
	args := []string{"--queue-prefix", m.prefix, "--queues", "audit,dup-high,dup-low,bit-report,bit-error,bit",
		"--task-types", "NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT", "--max-attempts", "1", "--workers", "4",
		"--http-addr", w.addr, "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false", "--worker-id", "adversarial",
		"--receive-wait", "1s", "--queue-backoff-min", "2s", "--queue-backoff-max", "4s",
		"--long-poll-wait", "1s", "--grace-period", "5s", "--noop-record", w.record}
	w.Proc = testbin.Start(m.t, testbin.Spec{Path: testbin.Build(m.t, "workman")["workman"], Args: append(args, extra...), Env: m.env()})
	return w
}

// env is the children's environment: the emulator's, and this Mill's.
func (m *mill) env() []string {
	return append(testbin.Env("MILL_CONFIG_DIR="+m.conf, "MILL_DATABASE_URL="+m.dbURL, "MILL_AUDIT_TABLE="+m.table,
		"MILL_REPORTS_BUCKET="+m.prefix+"reports", "MILL_CLAIMS_BUCKET="+m.claimsBucket, "MILL_QUEUE_PREFIX="+m.prefix), m.extraEnv...)
}

// alive checks that workman still runs and its /healthz answers 200.
func (w *worker) alive(t *testing.T) {
	t.Helper()
	w.Healthy(t, w.addr)
}

// send puts a raw message on a queue, with attributes, and returns its ID.
func (m *mill) send(key, body string, attrs map[string]string) string {
	m.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(m.urls[key]), MessageBody: aws.String(body)}
	for k, v := range attrs {
		if in.MessageAttributes == nil {
			in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
		}
		in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	before := m.resends.Count()
	out, err := m.sqsc.SendMessage(m.ctx, in)
	must(m.t, err)
	if m.resends.Count() > before {
		m.resends.sentAgain(body, aws.ToString(out.MessageId))
	}
	return aws.ToString(out.MessageId)
}

// encode returns a task's JSON body.
func encode(t *testing.T, tk *task.Task) string {
	t.Helper()
	b, err := task.Encode(tk, task.FormatJSON)
	must(t, err)
	return string(b)
}

// deadLetters reads the dead-letter queue (through the claim check) until
// the letters of want tasks arrived or the deadline passed, deleting what
// it read.
func (m *mill) deadLetters(want int, within time.Duration, w *worker) []*workman.DeadLetter {
	m.t.Helper()
	var out []*workman.DeadLetter
	m.deadLettersUntil(within, w, func(d *workman.DeadLetter) bool {
		out = append(out, d)
		return len(out) >= want
	})
	return out
}

// deadLettersUntil hands each task's letter to add (once per message ID,
// over every call) until add returns true or the deadline passes; every
// letter of the last batch read is handed over (all are deleted).
func (m *mill) deadLettersUntil(within time.Duration, w *worker, add func(*workman.DeadLetter) (done bool)) {
	m.t.Helper()
	dlq, err := m.claims.Open(m.ctx, m.sqsc, m.s3c, queue.Name(m.prefix, queue.KeyDeadLetter), sqsqueue.Config{})
	must(m.t, err)
	if m.lettered == nil {
		m.lettered = map[string]bool{}
	}
	for deadline, done := time.Now().Add(within), false; !done && time.Now().Before(deadline); {
		select {
		case <-w.Done():
			m.t.Fatalf("workman exited while processing: %v", w.Cmd.ProcessState)
		default:
		}
		ms, err := dlq.Receive(m.ctx, 10, time.Second)
		must(m.t, err)
		for _, msg := range ms {
			d, err := workman.DecodeDeadLetter(msg)
			if err != nil {
				m.t.Errorf("dead letter %s: %v", msg.ID, err)
				continue
			}
			// Delivery is at least once, dead letters included: one
			// task's letter may come twice, and a send the SDK retried
			// may have queued its task twice (counted as the one send).
			d.MessageID = m.resends.idOf(d)
			if !m.lettered[d.MessageID] {
				m.lettered[d.MessageID] = true
				done = add(d) || done
			}
		}
		if len(ms) > 0 {
			must(m.t, dlq.Delete(m.ctx, ms...))
		}
	}
}

// drained waits until every work queue is empty (nothing visible, in
// flight or delayed) three times in a row.
func (m *mill) drained(within time.Duration, w *worker) bool {
	m.t.Helper()
	empty := 0
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		select {
		case <-w.Done():
			m.t.Fatalf("workman exited: %v", w.Cmd.ProcessState)
		default:
		}
		n := 0
		for _, k := range queue.DefaultPriority {
			n += m.depth(k)
		}
		if n == 0 {
			if empty++; empty == 3 {
				return true
			}
		} else {
			empty = 0
		}
	}
	return false
}

func (m *mill) depth(key string) int {
	n, err := testenv.QueueDepth(m.ctx, m.sqsc, m.urls[key])
	if err != nil {
		return -1
	}
	return n
}

// snapshot is the state of everything Mill could touch: every version of
// every object of every bucket (key@version → ETag, or a delete marker),
// and every file, directory and link under the compared directories
// (path → content hash, "dir" or the link's target).
type snapshot map[string]string

func (m *mill) snapshot() snapshot {
	m.t.Helper()
	s := snapshot{}
	for _, b := range m.buckets {
		p := s3.NewListObjectVersionsPaginator(m.s3c, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		for p.HasMorePages() {
			out, err := p.NextPage(m.ctx)
			must(m.t, err)
			for _, v := range out.Versions {
				s["s3://"+b+"/"+aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId)] = aws.ToString(v.ETag)
			}
			for _, d := range out.DeleteMarkers {
				s["s3://"+b+"/"+aws.ToString(d.Key)+"@"+aws.ToString(d.VersionId)] = "delete marker"
			}
		}
	}
	for _, dir := range m.dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				s[p] = "link → " + target
			case fi.IsDir():
				s[p] = "dir"
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				s[p] = hex.EncodeToString(sum[:])
			}
			return nil
		})
		must(m.t, err)
	}
	return s
}

// diff returns what changed between s and after, leaving out the paths
// for which allowed returns true.
func (s snapshot) diff(after snapshot, allowed func(path string) bool) []string {
	var out []string
	for k, v := range s {
		if allowed(k) {
			continue
		}
		if w, ok := after[k]; !ok {
			out = append(out, "gone: "+k)
		} else if w != v {
			out = append(out, "changed: "+k)
		}
	}
	for k := range after {
		if _, ok := s[k]; !ok && !allowed(k) {
			out = append(out, "new: "+k)
		}
	}
	slices.Sort(out)
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
