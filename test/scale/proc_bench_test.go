package scale_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// procRun is what one producer run cost: its wall time, its CPU time
// (user and system; zero when not measured), its peak resident set and
// the RSS at its start (zero for a process of its own), and the tasks it
// sent.
type procRun struct {
	wall, cpu time.Duration
	peakMiB   float64
	tasks     int64
}

// runProcess runs the real dupproducer or bitproducer binary (kind "dup"
// or "bit") over the seeded space once, to the end of one run, and
// returns its cost and the tasks it sent. Its queues are real queues on
// MILL_BENCH_SQS_ENDPOINT (LocalStack under make bench, else
// AWS_ENDPOINT_URL), reached through a sink (sqsSink) that answers
// SendMessageBatch itself and drops the tasks: the figures are the
// producer's, not an emulator's holding a million messages. The bit
// producer's bit log is a fresh PostgreSQL schema.
func runProcess(b *testing.B, kind string, sp seeded) procRun {
	ctx := context.Background()
	bins := testbin.Build(b, "dupproducer", "bitproducer")
	cfg := testenv.AWS(b)
	ep := testenv.BenchSQSEndpoint(b)
	sqsc := cfg.SQS(func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	prefix := testenv.Prefix(b)
	testenv.CleanupQueues(b, sqsc, prefix)
	keys := map[string][]string{"dup": {queue.KeyDupLow}, "bit": {queue.KeyBit, queue.KeyBitReport}}[kind]
	for _, k := range keys {
		if _, err := (setup.Queue{Client: sqsc, QueueName: queue.Name(prefix, k), VisibilityTimeout: time.Minute}).Ensure(ctx); err != nil {
			b.Fatal(err)
		}
	}
	sink := newSQSSink(b, ep)
	args := []string{"--config-dir", sp.cfgDir, "--state", filepath.Join(b.TempDir(), "state.json"),
		"--lease-table", "none", "--frequency", "0", "--queue-prefix", prefix, "--progress", "off", "--log-level", "warn"}
	bin := bins["dupproducer"]
	if kind == "bit" {
		bin = bins["bitproducer"]
		args = append(args, "--database-url", bitLogURL(b))
	}
	env := append(os.Environ(), "AWS_ENDPOINT_URL="+sink.url, "AWS_ENDPOINT_URL_SQS="+sink.url)
	env = append(env, sp.env...)
	b.StartTimer()
	start := time.Now()
	p := testbin.Start(b, testbin.Spec{Path: bin, Args: args, Env: env})
	peak := watchPeak(b, p)
	_ = p.Wait(b, 2*time.Hour)
	wall := time.Since(start)
	b.StopTimer()
	if err := p.Err(); err != nil {
		b.Fatalf("%sproducer: %v\n%s", kind, err, testbin.CutLines(p.Output(), 400))
	}
	st := p.Cmd.ProcessState
	return procRun{wall: wall, cpu: st.UserTime() + st.SystemTime(), peakMiB: float64(<-peak) / (1 << 20), tasks: sink.sent.Load()}
}

// watchPeak reads the process's peak RSS (VmHWM, which only grows) every
// 10 ms until it exits and sends the last figure read. The rusage of the
// exited child cannot be used: a child started with vfork (as os/exec
// does) inherits at exec the peak of the parent's memory it shared — this
// test binary's — in its maximum RSS.
func watchPeak(b *testing.B, p *testbin.Proc) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		var anon, file string
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v := p.PeakRSS(); v > 0 {
				peak = v // 0: /proc no longer has it (exiting)
			}
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid)); err == nil {
				for l := range strings.SplitSeq(string(st), "\n") {
					if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
						anon = strings.TrimSpace(v)
					}
					if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
						file = strings.TrimSpace(v)
					}
				}
			}
			select {
			case <-p.Done():
				b.Logf("%s: resident when last read: %s anonymous, %s file-backed (the binary's pages)", p.Name, anon, file)
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// bitLogURL returns the URL of a fresh, migrated PostgreSQL schema.
func bitLogURL(b *testing.B) string {
	ctx := context.Background()
	u := testenv.Schema(b)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	return u
}

// sqsSink is an SQS endpoint for the producers' processes: it answers
// SendMessageBatch (JSON protocol) by counting and dropping the entries,
// with each body's MD5 as SQS does (the SDK checks it), and passes every
// other request (GetQueueUrl, GetQueueAttributes: the queue's depth) to
// the emulator.
type sqsSink struct {
	url  string
	sent atomic.Int64
}

func newSQSSink(b *testing.B, emulator string) *sqsSink {
	u, err := url.Parse(emulator)
	if err != nil {
		b.Fatal(err)
	}
	s := &sqsSink{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var ids atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessageBatch" {
			proxy.ServeHTTP(w, r)
			return
		}
		var in struct {
			Entries []struct{ Id, MessageBody string }
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type ok struct{ Id, MessageId, MD5OfMessageBody string }
		out := struct {
			Successful []ok
			Failed     []struct{}
		}{Failed: []struct{}{}}
		for _, e := range in.Entries {
			sum := md5.Sum([]byte(e.MessageBody))
			out.Successful = append(out.Successful, ok{Id: e.Id, MessageId: strconv.FormatInt(ids.Add(1), 10), MD5OfMessageBody: hex.EncodeToString(sum[:])})
		}
		s.sent.Add(int64(len(in.Entries)))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if err := json.NewEncoder(w).Encode(out); err != nil {
			panic(fmt.Sprintf("sqs sink: %v", err)) // the producer sees a broken response
		}
	}))
	b.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}
